// Serves one Connect service on its own port. Only a `main.ts` calls this.
// Every request: a request id (taken from the caller or made), the internal
// credential check, one log line, and errors that never carry internals.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual, createHash } from "node:crypto";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createUniversalHandlerClient, type UniversalClientFn } from "@connectrpc/connect/protocol";

type NodeHandler = NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>;
type NodeServerRequest = Parameters<NodeHandler>[0];
type NodeServerResponse = Parameters<NodeHandler>[1];
import type { Logger } from "./logger.js";
import { REQUEST_ID_HEADER, currentRequestId, runWithRequestId } from "./request-context.js";

export const INTERNAL_AUTH_HEADER = "authorization";

export type ReadinessCheck = () => Promise<Record<string, string>>;

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
}

export interface RunningServer {
  url: string;
  port: number;
  /**
   * The same routes and interceptors, called in memory: what a client in this
   * process may use instead of loopback HTTP (rpc-client.ts serveInProcess).
   */
  inProcess: UniversalClientFn;
  close(): Promise<void>;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/**
 * Refuses, with UNAUTHENTICATED, every call that does not carry one of the
 * internal credentials. The comparison is constant-time: the presented value
 * is hashed once and compared with the digest of every accepted credential,
 * all of them each time, so neither the timing nor an early exit tells which
 * one (if any) matched.
 */
export function internalAuthInterceptor(tokens: readonly string[]): Interceptor {
  if (tokens.length === 0 || tokens.some((t) => t.length === 0)) {
    throw new Error("internalAuthInterceptor: at least one non-empty internal credential is required");
  }
  const accepted = tokens.map((t) => digest(`Bearer ${t}`));
  return (next) => async (req) => {
    const given = digest(req.header.get(INTERNAL_AUTH_HEADER) ?? "");
    let matched = false;
    for (const expected of accepted) matched = timingSafeEqual(given, expected) || matched;
    if (!matched) {
      throw new ConnectError("internal credential missing or wrong", Code.Unauthenticated);
    }
    return next(req);
  };
}

/** Codes that mean the server failed (not the caller): logged at error, with the cause. */
const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);
/** Codes of a backend or a downstream service being slow or away: logged at warn, with the cause. */
const OUTAGES = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Canceled]);

/**
 * Request id, one log line per call, and unexpected errors turned into INTERNAL
 * with the cause logged. A call that succeeds is logged at debug (at info, the
 * line cost more than the read it described); an expected failure (a caller's
 * mistake, NotFound, Unimplemented, …) is one info line with its code and
 * message and no stack; an outage (Unavailable, DeadlineExceeded, Canceled) is
 * a warn line with its cause; a server fault is logged at error with its cause.
 */
export function contextInterceptor(logger: Logger): Interceptor {
  return (next) => (req) =>
    runWithRequestId(req.header.get(REQUEST_ID_HEADER), async () => {
      const started = performance.now();
      try {
        const res = await next(req);
        if (logger.isLevelEnabled("debug")) logger.debug(line(req, "ok", started), "rpc");
        return res;
      } catch (err) {
        if (!(err instanceof ConnectError)) {
          logger.error({ ...line(req, "Internal", started), err }, "rpc");
          throw new ConnectError("internal error", Code.Internal);
        }
        if (SERVER_FAULTS.has(err.code)) {
          logger.error({ ...line(req, Code[err.code], started), err: err.cause ?? err }, "rpc");
        } else if (OUTAGES.has(err.code)) {
          logger.warn({ ...line(req, Code[err.code], started), message: err.rawMessage, err: err.cause ?? err }, "rpc");
        } else {
          logger.info({ ...line(req, Code[err.code], started), message: err.rawMessage }, "rpc");
        }
        throw err;
      }
    });
}

function line(req: { service: { typeName: string }; method: { name: string } }, code: string | undefined, started: number) {
  return {
    requestId: currentRequestId(),
    procedure: `${req.service.typeName}/${req.method.name}`,
    code,
    ms: Math.round(performance.now() - started),
  };
}

export async function startRpcServer(options: RpcServerOptions): Promise<RunningServer> {
  const interceptors = [contextInterceptor(options.logger), internalAuthInterceptor(options.internalTokens)];
  const routerOptions = { interceptors, readMaxBytes: 4 * 1024 * 1024 };
  const handler = connectNodeAdapter({
    routes: options.routes,
    ...routerOptions,
    fallback: (req, res) => void healthRoutes(req, res, options.readiness),
  });
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  // Nagle off: an answer goes out as soon as it is written (Node's default, said here on purpose).
  const server = http.createServer({ keepAliveTimeout: 65_000, noDelay: true }, handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  options.logger.info({ port, host: options.host }, `${options.name} RPC listening`);
  return {
    url: `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`,
    port,
    inProcess: createUniversalHandlerClient(router.handlers),
    close: () =>
      new Promise<void>((resolve) => {
        // Stop accepting, let in-flight requests finish, then drop idle keep-alives.
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 10_000).unref();
      }),
  };
}

/** GET /healthz (process up) and GET /readyz (every backend reachable) beside the RPC routes. */
async function healthRoutes(req: NodeServerRequest, res: NodeServerResponse, readiness?: ReadinessCheck): Promise<void> {
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const path = (req.url ?? "").split("?")[0];
  if (req.method === "GET" && path === "/healthz") return send(200, { status: "ok" });
  if (req.method === "GET" && path === "/readyz") {
    try {
      const checks = readiness ? await readiness() : {};
      return send(200, { status: "ok", checks });
    } catch (err) {
      return send(503, { status: "unavailable", error: err instanceof Error ? err.message : String(err) });
    }
  }
  send(404, { error: "not_found", error_description: "no such route" });
}

/** A check that has not answered by then counts as failed (a caller's /readyz must not hang). */
const CHECK_TIMEOUT_MS = 1500;

/**
 * Runs every check. A failed `required` check makes the service unready (the
 * error names it); an `informational` one is only reported, e.g. the bus for a
 * service whose outbox rides out a broker outage.
 */
export async function runChecks(
  required: Record<string, () => Promise<unknown>>,
  informational: Record<string, () => Promise<unknown>> = {},
): Promise<Record<string, string>> {
  const all = { ...required, ...informational };
  const names = Object.keys(all);
  const withTimeout = (check: () => Promise<unknown>) =>
    Promise.race([
      check(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("check timed out")), CHECK_TIMEOUT_MS).unref()),
    ]);
  const results = await Promise.allSettled(names.map((n) => withTimeout(all[n]!)));
  const failed = names.filter((n, i) => results[i]!.status === "rejected" && n in required);
  if (failed.length > 0) throw new Error(`unavailable: ${failed.join(", ")}`);
  return Object.fromEntries(names.map((n, i) => [n, results[i]!.status === "fulfilled" ? "ok" : "unavailable"]));
}
