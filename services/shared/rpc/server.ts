// Serves one Connect service on its own port. Only a `main.ts` (or a test,
// a bench, the embedded start) calls this. Every request: a request id and a
// W3C trace context (taken from the caller or made), the internal credential check, strings
// checked for what no handler can store, one log line, and errors that never
// carry internals. The plain unary call takes the lean path (lean-server.ts);
// everything else connect-node's adapter serves, with /healthz, /readyz and
// /metrics (unauthenticated, like any Prometheus target on an internal port)
// as its fallback.
import type { AddressInfo } from "node:net";
import { createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Logger } from "../logger.js";
import { createUniversalHandlerClient, type UniversalClientFn } from "./connect-internals.js";
import { healthRoutes, type ReadinessCheck } from "./health.js";
import { contextInterceptor, internalAuthInterceptor } from "./interceptors.js";
import { metricsInterceptor } from "./metrics-interceptor.js";
import { invokeInProcess, isPlainUnary, leanInProcess, serveUnary, unaryRoutes } from "./lean-server.js";
import type { OnCallerGone } from "./call-signal.js";
import { createListener, type RequestHandler, type ServerResponse } from "./listener.js";
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
  inProcess: UniversalClientFn;
  close(): Promise<void>;
}

export async function startRpcServer(options: RpcServerOptions): Promise<RunningServer> {
  const interceptors = [metricsInterceptor(options.name), contextInterceptor(options.logger), internalAuthInterceptor(options.internalTokens), stringGuardInterceptor()];
  const readMaxBytes = options.readMaxBytes ?? 4 * 1024 * 1024;
  const routerOptions = { interceptors, readMaxBytes };
  const connectHandler = connectNodeAdapter({
    routes: options.routes,
    ...routerOptions,
    fallback: (req, res) => void healthRoutes(req, res as ServerResponse, options.readiness),
  });
  const unary = unaryRoutes(options.routes);
  const handler: RequestHandler = (req, res) => {
    const route = req.method === "POST" ? unary.get(req.url ?? "") : undefined;
    if (route && isPlainUnary(req)) serveUnary(route, req, res, interceptors, readMaxBytes);
    else connectHandler(req as never, res as never);
  };
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const inProcess = createUniversalHandlerClient(router.handlers);
  const listener = createListener(handler);
  const server = listener.server;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  options.logger.info({ port, host: options.host }, `${options.name} RPC listening`);
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
  leanInProcess.set(inProcess, (path, headers, input, signal, credential) => {
    const route = unary.get(path);
    if (!route) return undefined;
    const gone: OnCallerGone = (abort) => signal?.addEventListener("abort", abort, { once: true });
    return invokeInProcess(route, headers, `${url}${path}`, input, interceptors, gone, credential);
  });
  return {
    url,
    port,
    inProcess,
    // Stop accepting, let in-flight requests finish, then drop idle keep-alives.
    close: () => listener.close(10_000),
  };
}
