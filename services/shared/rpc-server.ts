// Serves one Connect service on its own port. Only a `main.ts` calls this.
// Every request: a request id (taken from the caller or made), the internal
// credential check, one log line, and errors that never carry internals.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { timingSafeEqual, createHash } from "node:crypto";
import { create, fromBinary, isMessage, toBinary, type DescMethod, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createUniversalHandlerClient, type UniversalClientFn } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";

type NodeHandler = NonNullable<Parameters<typeof connectNodeAdapter>[0]["fallback"]>;
type NodeServerRequest = Parameters<NodeHandler>[0];
type NodeServerResponse = Parameters<NodeHandler>[1];
import type { Logger } from "./logger.js";
import { REQUEST_ID_HEADER, requestIdFrom, runWithRequestId } from "./request-context.js";

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
  return (next) => (req) => {
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    return runWithRequestId(requestId, async () => {
      const started = performance.now();
      try {
        const res = await next(req);
        if (logger.isLevelEnabled("debug")) logger.debug(line(req, requestId, "ok", started), "rpc");
        return res;
      } catch (err) {
        if (!(err instanceof ConnectError)) {
          logger.error({ ...line(req, requestId, "Internal", started), err }, "rpc");
          throw new ConnectError("internal error", Code.Internal);
        }
        if (SERVER_FAULTS.has(err.code)) {
          logger.error({ ...line(req, requestId, Code[err.code], started), err: err.cause ?? err }, "rpc");
        } else if (OUTAGES.has(err.code)) {
          logger.warn({ ...line(req, requestId, Code[err.code], started), message: err.rawMessage, err: err.cause ?? err }, "rpc");
        } else {
          logger.info({ ...line(req, requestId, Code[err.code], started), message: err.rawMessage }, "rpc");
        }
        throw err;
      }
    });
  };
}

function line(req: { service: { typeName: string }; method: { name: string } }, requestId: string, code: string | undefined, started: number) {
  return {
    requestId,
    procedure: `${req.service.typeName}/${req.method.name}`,
    code,
    ms: Math.round(performance.now() - started),
  };
}

export async function startRpcServer(options: RpcServerOptions): Promise<RunningServer> {
  const interceptors = [contextInterceptor(options.logger), internalAuthInterceptor(options.internalTokens)];
  const readMaxBytes = 4 * 1024 * 1024;
  const routerOptions = { interceptors, readMaxBytes };
  const connectHandler = connectNodeAdapter({
    routes: options.routes,
    ...routerOptions,
    fallback: (req, res) => void healthRoutes(req, res, options.readiness),
  });
  const unary = unaryRoutes(options.routes);
  const handler: NodeHandler = (req, res) => {
    const route = req.method === "POST" ? unary.get(req.url ?? "") : undefined;
    if (route && isPlainUnary(req)) serveUnary(route, req, res, interceptors, readMaxBytes);
    else connectHandler(req, res);
  };
  const router = createConnectRouter(routerOptions);
  options.routes(router);
  const inProcess = createUniversalHandlerClient(router.handlers);
  // Nagle off: an answer goes out as soon as it is written (Node's default, said here on purpose).
  const server = http.createServer({ keepAliveTimeout: 65_000, noDelay: true }, handler);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  options.logger.info({ port, host: options.host }, `${options.name} RPC listening`);
  const url = `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}`;
  leanInProcess.set(inProcess, (path, headers, body, signal) => {
    const route = unary.get(path);
    if (!route) return undefined;
    const gone: OnCallerGone = (abort) => signal?.addEventListener("abort", abort, { once: true });
    return invoke(route, headers, `${url}${path}`, body, interceptors, gone);
  });
  return {
    url,
    port,
    inProcess,
    close: () =>
      new Promise<void>((resolve) => {
        // Stop accepting, let in-flight requests finish, then drop idle keep-alives.
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => server.closeAllConnections(), 10_000).unref();
      }),
  };
}

// The lean unary path.
//
// Profiled (--cpu-prof, GetOrganisation, 10 in flight), connect-node's
// universal handler spent per call more CPU than the organisation read it
// served: Web Headers copied three times, a deadline timer, two
// AbortControllers and an abort() at the end of every call (a DOMException
// with its stack), async iterables for a body of one message. The plain case
// of every call between this project's services (a unary POST, binary, not
// compressed) is served here instead: the same Connect protocol
// (https://connectrpc.com/docs/protocol: "Unary-Request → Unary-Request-Headers
// Bare-Message", errors as JSON with the HTTP status of their code), the same
// interceptors (credential, request id, log line) and the same implementations
// as connect's router holds. Anything else (JSON, GET, compression, a bad
// timeout or protocol version, a path no service has) goes to connect's handler.

/**
 * The lean unary path of a server of this process, reached in memory: the
 * same invocation as over HTTP (Connect's binary encoding, the interceptors),
 * without the socket. Undefined for a path it does not serve that way.
 */
export type InProcessUnary = (
  path: string,
  headers: http.IncomingHttpHeaders,
  body: Uint8Array,
  signal: AbortSignal | undefined,
) => Promise<UnaryAnswer> | undefined;

const leanInProcess = new WeakMap<UniversalClientFn, InProcessUnary>();

/** The lean path behind a RunningServer's `inProcess` (rpc-client.ts uses it for unary calls). */
export function inProcessUnary(server: UniversalClientFn): InProcessUnary | undefined {
  return leanInProcess.get(server);
}

interface UnaryRoute {
  service: DescService;
  method: DescMethodUnary;
  impl: (req: unknown, ctx: HandlerContext) => unknown;
}

/** The unary methods the routes register without options of their own, by path. */
function unaryRoutes(routes: (router: ConnectRouter) => void): Map<string, UnaryRoute> {
  const table = new Map<string, UnaryRoute>();
  const add = (method: DescMethod, impl: unknown) => {
    if (method.methodKind !== "unary" || typeof impl !== "function") return;
    table.set(`/${method.parent.typeName}/${method.name}`, { service: method.parent, method: method as DescMethodUnary, impl: impl as UnaryRoute["impl"] });
  };
  const recorder = {
    handlers: [],
    service(service: DescService, implementation: object, options?: object) {
      if (options === undefined) {
        const spec = createServiceImplSpec(service, implementation as never);
        for (const m of Object.values(spec.methods)) add(m.method, m.impl);
      }
      return recorder;
    },
    rpc(method: DescMethod, impl: unknown, options?: object) {
      if (options === undefined) add(method, impl);
      return recorder;
    },
  };
  routes(recorder as unknown as ConnectRouter);
  return table;
}

/** A unary Connect POST this path serves: binary, identity, protocol version 1 (or unsaid), a valid timeout. */
function isPlainUnary(req: NodeServerRequest): boolean {
  const h = req.headers;
  const encoding = h["content-encoding"];
  const version = h["connect-protocol-version"];
  const timeout = h["connect-timeout-ms"];
  return (
    h["content-type"] === contentTypeUnaryProto &&
    (encoding === undefined || encoding === "identity") &&
    (version === undefined || version === "1") &&
    (timeout === undefined || (typeof timeout === "string" && /^\d{1,10}$/.test(timeout)))
  );
}

/** A unary call's answer, as it goes on the wire. */
export interface UnaryAnswer {
  status: number;
  headers: http.OutgoingHttpHeaders;
  body: Uint8Array;
}

/** Registers `abort` to run when the caller goes away before the answer. */
type OnCallerGone = (abort: () => void) => void;

function serveUnary(route: UnaryRoute, req: NodeServerRequest, res: NodeServerResponse, interceptors: Interceptor[], readMaxBytes: number): void {
  const write = (answer: UnaryAnswer) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  };
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > readMaxBytes) {
    req.resume();
    return write(errorAnswer(new ConnectError(`message size ${declared} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted)));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size <= readMaxBytes) chunks.push(chunk);
  });
  req.on("end", () => {
    if (size > readMaxBytes) {
      return write(errorAnswer(new ConnectError(`message size is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted)));
    }
    const gone: OnCallerGone = (abort) =>
      res.once("close", () => {
        if (!res.writableFinished) abort();
      });
    const url = `http://${req.headers.host ?? "localhost"}${req.url}`;
    void invoke(route, req.headers, url, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), interceptors, gone).then(write);
  });
}

/** Serves one unary call; never rejects (a failure is its error answer). */
async function invoke(
  route: UnaryRoute,
  requestHeaders: http.IncomingHttpHeaders,
  url: string,
  body: Uint8Array,
  interceptors: Interceptor[],
  gone: OnCallerGone,
): Promise<UnaryAnswer> {
  const { service, method } = route;
  const timeoutHeader = requestHeaders["connect-timeout-ms"];
  const deadline = typeof timeoutHeader === "string" ? Date.now() + Number(timeoutHeader) : undefined;
  const call = new CallSignal(gone, deadline);
  const header = new Headers();
  for (const [key, value] of Object.entries(requestHeaders)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) header.append(key, v);
    else header.set(key, value);
  }
  let responseHeader: Headers | undefined;
  let responseTrailer: Headers | undefined;
  // Read by interceptors and handlers; Headers made only for those that use them.
  const response = {
    get header() {
      return (responseHeader ??= new Headers());
    },
    get trailer() {
      return (responseTrailer ??= new Headers());
    },
  };
  const implementation = async (ureq: UnaryRequest): Promise<UnaryResponse> => {
    const ctx: HandlerContext = {
      service,
      method,
      requestMethod: ureq.requestMethod,
      protocolName: "connect",
      url: ureq.url,
      requestHeader: ureq.header,
      values: ureq.contextValues,
      timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
      get signal() {
        return call.signal;
      },
      get responseHeader() {
        return response.header;
      },
      get responseTrailer() {
        return response.trailer;
      },
    };
    const out = await route.impl(ureq.message, ctx);
    const message = isMessage(out, method.output) ? out : create(method.output, out as never);
    return {
      stream: false,
      service,
      method,
      message,
      get header() {
        return response.header;
      },
      get trailer() {
        return response.trailer;
      },
    } as UnaryResponse;
  };
  try {
    let next = implementation as (r: UnaryRequest) => Promise<UnaryResponse>;
    for (let i = interceptors.length - 1; i >= 0; i--) next = interceptors[i]!(next as never) as typeof next;
    let input;
    try {
      input = fromBinary(method.input, body);
    } catch (e) {
      throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
    }
    const ureq = {
      stream: false,
      service,
      method,
      requestMethod: "POST",
      url,
      header,
      contextValues: createContextValues(),
      message: input,
      get signal() {
        return call.signal;
      },
    } as UnaryRequest;
    const answer = await next(ureq);
    // An interceptor may answer with headers of its own.
    if (answer.header !== responseHeader && answer.header !== undefined) answer.header.forEach((v, k) => response.header.set(k, v));
    if (answer.trailer !== responseTrailer && answer.trailer !== undefined) answer.trailer.forEach((v, k) => response.trailer.set(k, v));
    const bytes = toBinary(method.output, answer.message as never);
    call.end();
    const headers = outgoing(responseHeader, responseTrailer);
    headers["content-type"] = contentTypeUnaryProto;
    headers["content-length"] = bytes.byteLength;
    return { status: 200, headers, body: bytes };
  } catch (e) {
    call.end(e);
    return errorAnswer(e, responseHeader, responseTrailer);
  }
}

function errorAnswer(e: unknown, responseHeader?: Headers, responseTrailer?: Headers): UnaryAnswer {
  const error = e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
  const header = responseHeader ?? new Headers();
  error.metadata.forEach((value, key) => header.set(key, value));
  const body = errorToJsonBytes(error, {});
  const headers = outgoing(header, responseTrailer);
  headers["content-type"] = contentTypeUnaryJson;
  headers["content-length"] = body.byteLength;
  return { status: codeToHttpStatus(error.code), headers, body };
}

/** Response headers, and trailers as Connect sends a unary call's: trailer-* headers. */
function outgoing(header: Headers | undefined, trailer: Headers | undefined): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  header?.forEach((value, key) => (out[key] = value));
  trailer?.forEach((value, key) => (out[`trailer-${key}`] = value));
  return out;
}

/**
 * The call's AbortSignal, made only when a handler or interceptor reads it:
 * aborted at the deadline, when the caller goes away, and when the call ends
 * (as connect's handler context does).
 */
class CallSignal {
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    private readonly gone: OnCallerGone,
    private readonly deadline: number | undefined,
  ) {}

  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const controller = (this.controller = new AbortController());
    if (this.ended) {
      controller.abort();
      return controller.signal;
    }
    if (this.deadline !== undefined) {
      const expire = () => controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      const left = this.deadline - Date.now();
      if (left <= 0) expire();
      else this.timer = setTimeout(expire, left);
    }
    this.gone(() => {
      if (!this.ended) controller.abort(new ConnectError("operation canceled", Code.Canceled));
    });
    return controller.signal;
  }

  end(reason?: unknown): void {
    this.ended = true;
    if (!this.controller) return;
    clearTimeout(this.timer);
    this.controller.abort(reason);
  }
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
