// Clients between services: connect-node's Connect transport over HTTP/1.1,
// with a deadline on every call, the internal credential, and the caller's
// request id and trace context. A service of this process (`npm start`) is
// reached by a direct call instead (direct-transport.ts): the same handlers
// and interceptors, no network hop.
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, createConnectTransport } from "@connectrpc/connect-node";
import type { DescService, Message } from "@bufbuild/protobuf";
import { REQUEST_ID_HEADER, currentRequest } from "../request-context.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import { refuseUnsafeStrings } from "./string-guard.js";

export interface RpcClientOptions {
  baseUrl: string;
  timeoutMs: number;
  internalToken?: string;
  /**
   * The largest response message read (default 4 MiB, what the servers accept
   * as a request); a larger answer fails with ResourceExhausted instead of
   * being buffered.
   */
  readMaxBytes?: number;
}

export const DEFAULT_READ_MAX_BYTES = 4 * 1024 * 1024;

/** Where every call carries the internal credential (`Bearer <token>`), which the servers' interceptor checks. */
export const INTERNAL_AUTH_HEADER = "authorization";

/** A server's routes in memory, given the client's interceptors and deadline (server.ts). */
export type InProcessServer = (client: { interceptors: Interceptor[]; defaultTimeoutMs: number }) => Transport;

/** Servers of this process that clients reach in memory, by origin (see serveInProcess). */
const inProcessServers = new Map<string, InProcessServer>();

/**
 * `npm start`: calls to `baseUrl` go to that server's routes in this
 * process, through the same interceptors, without loopback HTTP. Returns the
 * undo.
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

/**
 * connect-node answers a kept-alive connection the server has closed (it
 * stopped, or restarted) as Internal (EPIPE) or Aborted (ECONNRESET); to the
 * caller that is the server being away, as when nothing listens: Unavailable,
 * which the gateway answers 503 with Retry-After.
 */
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
  // Encoded, a lone surrogate would arrive as U+FFFD, a value the caller never sent: refused
  // before it leaves. A direct call hands the server the strings as they are, and its guard
  // refuses them there.
  const unencodable: Interceptor = (next) => (req) => {
    if (!req.stream) refuseUnsafeStrings(req.method.input, req.message as Message);
    return next(req);
  };
  const readMaxBytes = options.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  const overHttp = createConnectTransport({
    baseUrl: options.baseUrl,
    httpVersion: "1.1",
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    interceptors: [serverAway, propagate, unencodable],
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes,
  });
  // The server of this process that serves the origin, if any: looked up on every call, so a
  // client made before its server started (or after it stopped) takes the right path.
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
