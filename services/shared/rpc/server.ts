// Serves one Connect service on its own port with connect-node's adapter
// (Connect, gRPC and gRPC-Web; HTTP/1.1 and h2c, listener.ts). Only a
// `main.ts` (or a test, a bench, the embedded start) calls this. Every call:
// a request id and a W3C trace context (taken from the caller or made), the
// internal credential check, strings checked for what no handler can store,
// one log line, and errors that never carry internals. /healthz, /readyz and
// /metrics (unauthenticated, like any Prometheus target on an internal port)
// are the adapter's fallback.
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "../logger.js";
import type { InProcessServer } from "./client.js";
import { createDirectTransport, unaryHandlers } from "./direct-transport.js";
import { healthRoutes, type ReadinessCheck } from "./health.js";
import { contextInterceptor, internalAuthInterceptor } from "./interceptors.js";
import { createListener, type ServerResponse } from "./listener.js";
import { metricsInterceptor } from "./metrics-interceptor.js";
import { stringGuardInterceptor } from "./string-guard.js";

export interface RpcServerOptions {
  name: string;
  host: string;
  port: number;
  routes: (router: ConnectRouter) => void;
  logger: Logger;
  /**
   * The accepted internal credentials (at least one): every RPC must carry
   * `Authorization: Bearer <one of them>`. There is no anonymous mode.
   */
  internalTokens: readonly string[];
  /** Named checks for GET /readyz: each resolves to "ok" or throws. */
  readiness?: ReadinessCheck;
  /** The largest request message accepted (default 4 MiB); a larger one is ResourceExhausted. */
  readMaxBytes?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  /**
   * The same routes and interceptors, called in memory: what a client in this
   * process may use instead of loopback HTTP (client.ts serveInProcess).
   */
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
  const router = { interceptors, readMaxBytes: options.readMaxBytes ?? 4 * 1024 * 1024 };
  const handler = connectNodeAdapter({
    routes: options.routes,
    ...router,
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
      createDirectTransport({
        baseUrl: url,
        handlers,
        serverInterceptors: interceptors,
        clientInterceptors: client.interceptors,
        defaultTimeoutMs: client.defaultTimeoutMs,
      }),
    // Stop accepting, let in-flight requests finish, then drop idle keep-alives.
    close: () => listener.close(10_000),
  };
}
