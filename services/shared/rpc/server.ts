// Serves one Connect service on its own port (Connect, gRPC and gRPC-Web;
// HTTP/1.1 and h2c) through the interceptors of interceptors.ts and the
// string guard; /healthz, /readyz and /metrics are the adapter's fallback.
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "../logger.js";
import type { InProcessServer } from "./client.js";
import { createDirectTransport, unaryHandlers } from "./direct-transport.js";
import { healthRoutes, type ReadinessCheck } from "./health.js";
import { contextInterceptor, internalAuthInterceptor, metricsInterceptor } from "./interceptors.js";
import { createListener, type ServerResponse } from "./listener.js";
import { stringGuardInterceptor } from "./string-guard.js";

export interface RpcServerOptions {
  name: string;
  host: string;
  port: number;
  routes: (router: ConnectRouter) => void;
  logger: Logger;
  /** The accepted internal credentials (at least one: there is no anonymous mode). */
  internalTokens: readonly string[];
  /** Named checks for GET /readyz: each resolves to "ok" or throws. */
  readiness?: ReadinessCheck;
  /** The largest request message accepted (default 4 MiB); a larger one is ResourceExhausted. */
  readMaxBytes?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  /** The same routes and interceptors, called in memory (client.ts serveInProcess). */
  inProcess: InProcessServer;
  close(): Promise<void>;
}

export async function startRpcServer(options: RpcServerOptions): Promise<RunningServer> {
  const interceptors = [
    metricsInterceptor(options.name),
    contextInterceptor(options.logger),
    internalAuthInterceptor(options.internalTokens),
    stringGuardInterceptor(),
  ];
  const handler = connectNodeAdapter({
    routes: options.routes,
    interceptors,
    readMaxBytes: options.readMaxBytes ?? 4 * 1024 * 1024,
    fallback: (req, res) => void healthRoutes(req, res as ServerResponse, options.readiness),
  });
  const listener = createListener(handler as never);
  const server = listener.server;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  options.logger.info({ port, host: options.host }, `${options.name} RPC listening`);
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
  const handlers = unaryHandlers(options.routes);
  return {
    url,
    port,
    inProcess: (client) =>
      createDirectTransport(url, handlers, [...client.interceptors, ...interceptors], client.defaultTimeoutMs),
    // Stop accepting, let in-flight requests finish, then drop idle keep-alives.
    close: () => listener.close(10_000),
  };
}
