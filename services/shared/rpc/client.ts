// Clients between services: connect-node's Connect transport over HTTP/1.1,
// with a deadline, the internal credential, and the caller's request id and
// trace context on every call. A service of this process (`npm start`) is
// called directly instead (direct-transport.ts), through the same interceptors.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { REQUEST_ID_HEADER, currentRequest } from "../request-context.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import { stringGuardInterceptor } from "./string-guard.js";

export interface RpcClientOptions {
  baseUrl: string;
  timeoutMs: number;
  internalToken?: string;
  /** The largest response read (default 4 MiB, as the servers' requests); a larger one is ResourceExhausted. */
  readMaxBytes?: number;
}

/** Where every call carries the internal credential (`Bearer <token>`), which the servers' interceptor checks. */
export const INTERNAL_AUTH_HEADER = "authorization";

/** A server's routes in memory, given the client's interceptors and deadline (server.ts). */
export type InProcessServer = (client: { interceptors: Interceptor[]; defaultTimeoutMs: number }) => Transport;

/** Servers of this process that clients reach in memory, by origin (see serveInProcess). */
const inProcessServers = new Map<string, InProcessServer>();

/**
 * `npm start`: calls to `baseUrl` go to that server's routes in this process, without loopback HTTP. Returns the undo.
 */
export function serveInProcess(baseUrl: string, server: InProcessServer): () => void {
  const origin = new URL(baseUrl).origin;
  inProcessServers.set(origin, server);
  return () => {
    if (inProcessServers.get(origin) === server) inProcessServers.delete(origin);
  };
}

/** Node's codes for a connection the other side closed or refused. */
const CONNECTION_LOST = new Set(["EPIPE", "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "EHOSTUNREACH", "ENETUNREACH"]);

function connectionLost(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if (CONNECTION_LOST.has((e as NodeJS.ErrnoException).code ?? "")) return true;
  }
  return false;
}

/** A kept-alive connection the server closed (EPIPE, ECONNRESET) is the server being away: Unavailable. */
const serverAway: Interceptor = (next) => (req) =>
  next(req).catch((err: unknown) => {
    if (err instanceof ConnectError && err.code !== Code.Unavailable && connectionLost(err)) {
      throw new ConnectError(err.rawMessage, Code.Unavailable, err.metadata, undefined, err);
    }
    throw err;
  });

export function createRpcClient<T extends DescService>(service: T, options: RpcClientOptions): Client<T> {
  const authorization = options.internalToken ? `Bearer ${options.internalToken}` : undefined;
  const propagate: Interceptor = (next) => (req) => {
    // An id the caller set explicitly wins; otherwise the one of the request being served.
    const current = currentRequest();
    if (current && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, current.requestId);
    // W3C Trace Context: the caller's span is the parent of the next hop.
    if (current?.traceparent && !req.header.has(TRACEPARENT_HEADER)) {
      req.header.set(TRACEPARENT_HEADER, current.traceparent);
      if (current.tracestate) req.header.set(TRACESTATE_HEADER, current.tracestate);
    }
    if (authorization) req.header.set(INTERNAL_AUTH_HEADER, authorization);
    return next(req);
  };
  const overHttp = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    // Encoded, a lone surrogate would arrive as U+FFFD: refused before it leaves.
    interceptors: [serverAway, propagate, stringGuardInterceptor()],
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: options.readMaxBytes ?? 4 * 1024 * 1024,
  });
  // Looked up on every call: a client made before its server started (or after it stopped) takes the right path.
  const origin = new URL(options.baseUrl).origin;
  const inMemory = new WeakMap<InProcessServer, Transport>();
  const pick = (): Transport => {
    const server = inProcessServers.get(origin);
    if (!server) return overHttp;
    let transport = inMemory.get(server);
    if (!transport)
      inMemory.set(
        server,
        (transport = server({ interceptors: [serverAway, propagate], defaultTimeoutMs: options.timeoutMs })),
      );
    return transport;
  };
  const transport: Transport = {
    unary: (...args) => pick().unary(...args),
    stream: (...args) => pick().stream(...args),
  };
  return createClient(service, transport);
}
