// Clients between services: Connect over HTTP/1.1 with a deadline on every
// call, the internal credential, and the caller's request id and trace context.
import http from "node:http";
import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethodUnary, type DescService, type Message, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport, type UnaryResponse } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { REQUEST_ID_HEADER, currentRequest, currentRequestId } from "../request-context.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import {
  CONNECT_VERSION,
  codeFromHttpStatus,
  contentTypeUnaryProto,
  createTransport,
  errorFromJsonBytes,
  getAbortSignalReason,
  parseContentType,
  protocolVersion,
  validateReadWriteMaxBytes,
  type UniversalClientFn,
} from "./connect-internals.js";
import { createHttp1Client, createUnaryHttp1Client } from "./http1-transport.js";
import { INTERNAL_AUTH_HEADER, credentialDigest } from "./interceptors.js";
import { inProcessUnary } from "./lean-server.js";
import { PLAIN_NAME, PLAIN_VALUE } from "./request-headers.js";
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

/** Servers of this process that clients reach in memory, by origin (see serveInProcess). */
const inProcessServers = new Map<string, UniversalClientFn>();

/**
 * `npm start`: calls to `baseUrl` go to that server's handlers in this
 * process, through the same interceptors, but without loopback HTTP (on the
 * project's machine a loopback round trip cost more CPU than the read it
 * carried) and, for a unary call, without the encoding: its messages are
 * copied instead (lean-server.ts InProcessUnary). Returns the undo.
 */
export function serveInProcess(baseUrl: string, server: UniversalClientFn): () => void {
  const origin = new URL(baseUrl).origin;
  inProcessServers.set(origin, server);
  return () => {
    if (inProcessServers.get(origin) === server) inProcessServers.delete(origin);
  };
}

/** What connect-es itself sends: its name and the installed version. */
const USER_AGENT = `connect-es/${CONNECT_VERSION}`;

export function createRpcClient<T extends DescService>(service: T, options: RpcClientOptions): Client<T> {
  const authorization = options.internalToken ? `Bearer ${options.internalToken}` : undefined;
  // A server of this process compares this digest instead of hashing the header on every call.
  const credential = authorization === undefined ? undefined : credentialDigest(authorization);
  const propagate: Interceptor = (next) => (req) => {
    // An id the caller set explicitly wins; otherwise the one of the request being served.
    const requestId = currentRequestId();
    if (requestId && !req.header.has(REQUEST_ID_HEADER)) req.header.set(REQUEST_ID_HEADER, requestId);
    const current = currentRequest();
    if (current?.traceparent && !req.header.has(TRACEPARENT_HEADER)) {
      req.header.set(TRACEPARENT_HEADER, current.traceparent);
      if (current.tracestate) req.header.set(TRACESTATE_HEADER, current.tracestate);
    }
    if (authorization) req.header.set(INTERNAL_AUTH_HEADER, authorization);
    return next(req);
  };
  const readMaxBytes = options.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  const http1 = createHttp1Client();
  const origin = new URL(options.baseUrl).origin;
  // connect-node's createConnectTransport with its defaults, over the one-write HTTP/1.1 client
  // (or in memory, when the server runs in this process and was offered with serveInProcess).
  const connectTransport = createTransport({
    baseUrl: options.baseUrl,
    httpClient: (req) => (inProcessServers.get(origin) ?? http1)(req),
    useBinaryFormat: true,
    defaultTimeoutMs: options.timeoutMs,
    interceptors: [propagate],
    acceptCompression: [compressionGzip, compressionBrotli],
    sendCompression: null,
    ...validateReadWriteMaxBytes(readMaxBytes, undefined, undefined),
  });
  const send = createUnaryHttp1Client(readMaxBytes);
  const base = options.baseUrl.replace(/\/+$/, "");
  const urls = new Map<string, URL>();

  // Unary calls take the lean path: the same Connect protocol, headers and deadline as connect's
  // transport above, without its per-call async iterables, abort controllers and Web Headers
  // (together most of the client's CPU per call). A call to a server of this process goes to
  // that server's lean path in memory (lean-server.ts inProcessUnary), its messages copied rather
  // than encoded, through the same interceptors. Streaming calls go through connect's transport.
  const transport: Transport = {
    async unary(method, signal, timeoutMs, header, message, contextValues) {
      const local = inProcessServers.get(origin);
      const lean = local && inProcessUnary(local);
      if (local && !lean) return connectTransport.unary(method, signal, timeoutMs, header, message, contextValues);
      const timeout = timeoutMs === undefined ? options.timeoutMs : timeoutMs <= 0 ? undefined : timeoutMs;
      const headers: http.OutgoingHttpHeaders = {};
      if (header) copyHeaders(header, headers);
      if (timeout !== undefined) headers["connect-timeout-ms"] = String(timeout);
      headers["content-type"] = contentTypeUnaryProto;
      headers["connect-protocol-version"] = protocolVersion;
      headers["user-agent"] ??= USER_AGENT;
      const current = headers[REQUEST_ID_HEADER] === undefined || headers[TRACEPARENT_HEADER] === undefined ? currentRequest() : undefined;
      if (current) {
        headers[REQUEST_ID_HEADER] ??= current.requestId;
        // W3C Trace Context: the caller's span is the parent of the next hop.
        if (headers[TRACEPARENT_HEADER] === undefined && current.traceparent) {
          headers[TRACEPARENT_HEADER] = current.traceparent;
          if (current.tracestate) headers[TRACESTATE_HEADER] = current.tracestate;
        }
      }
      if (authorization) headers[INTERNAL_AUTH_HEADER] = authorization;
      let url = urls.get(method.name);
      if (!url) urls.set(method.name, (url = new URL(`${base}/${method.parent.typeName}/${method.name}`)));
      const input = isMessage(message, method.input) ? message : create(method.input, message);
      // Encoded, a lone surrogate would arrive as U+FFFD, a value the caller never sent.
      refuseUnsafeStrings(method.input, input);
      if (lean) {
        const served = lean(url.pathname, headers as http.IncomingHttpHeaders, input, signal, credential);
        if (!served) return connectTransport.unary(method, signal, timeoutMs, header, message, contextValues);
        const answer = await withDeadline(served, timeout, signal);
        // An error answer is read as one that came over HTTP (its JSON, its status).
        return "message" in answer ? servedResponse(method, answer) : unaryResponse(method, answer, readMaxBytes);
      }
      const body = toBinary(method.input, input);
      return unaryResponse(method, await send({ url, headers, body, timeoutMs: timeout, signal }), readMaxBytes);
    },
    stream: (...args) => connectTransport.stream(...args),
  };
  return createClient(service, transport);
}


/**
 * A call's headers as connect's transport sends them: what `new Headers(init)`
 * keeps (names lowercased, values trimmed, invalid ones refused with its
 * TypeError). The plain object of lowercase names and plain values that
 * every caller here passes (the gateway's request id and trace context) is
 * copied as it is: making a Web Headers for it cost about 2 % of a token
 * request's CPU under npm start. Anything else goes through Web Headers.
 */
function copyHeaders(init: NonNullable<Parameters<Transport["unary"]>[3]>, into: http.OutgoingHttpHeaders): void {
  if (Object.getPrototypeOf(init) === Object.prototype) {
    const record = init as Record<string, unknown>;
    const names = Object.keys(record);
    if (names.every((name) => PLAIN_NAME.test(name) && typeof record[name] === "string" && PLAIN_VALUE.test(record[name] as string))) {
      for (const name of names) into[name] = record[name] as string;
      return;
    }
  }
  new Headers(init).forEach((value, key) => (into[key] = value));
}

/** The answer of a server of this process: its message as is (lean-server.ts copied it). */
function servedResponse<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, answer: { headers: Answer["headers"]; message: Message }): UnaryResponse<I, O> {
  return new LazyUnaryResponse(method, answer.message as MessageShape<O>, answer.headers) as UnaryResponse<I, O>;
}

/** An answer as connect's transport reads it (validateResponse, trailerDemux, errorFromJsonBytes). */
async function unaryResponse<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  res: Answer,
  readMaxBytes: number,
): Promise<UnaryResponse<I, O>> {
  if (res.body.byteLength > readMaxBytes) {
    throw new ConnectError(`message size is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
  }
  const contentType = header(res.headers, "content-type");
  let body: Uint8Array = res.body;
  const encoding = header(res.headers, "content-encoding");
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") {
    const compression = [compressionGzip, compressionBrotli].find((c) => c.name === encoding);
    if (!compression) throw new ConnectError(`unsupported response encoding "${encoding}"`, Code.Internal, webHeaders(res.headers));
    body = await compression.decompress(body, readMaxBytes);
  }
  if (res.status !== 200) {
    const metadata = webHeaders(res.headers);
    const fromStatus = new ConnectError(`HTTP ${res.status}`, codeFromHttpStatus(res.status), metadata);
    const parsed = parseContentType(contentType ?? null);
    if (parsed && !parsed.binary) throw errorFromJsonBytes(body, metadata, fromStatus);
    throw fromStatus;
  }
  if (contentType !== contentTypeUnaryProto) {
    const parsed = parseContentType(contentType ?? null);
    if (!parsed?.binary || parsed.stream) {
      throw new ConnectError(`unsupported content type ${contentType}`, parsed === undefined ? Code.Unknown : Code.Internal, webHeaders(res.headers));
    }
  }
  const output = fromBinary(method.output, body);
  return new LazyUnaryResponse(method, output, res.headers) as UnaryResponse<I, O>;
}

/**
 * A unary call's answer as connect reads it: header and trailer (Connect
 * sends a unary call's trailers as trailer-* headers) made only when read.
 * The getters are the class's: getters defined on each answer
 * (Object.defineProperties with closures) gave every answer a hidden class
 * of its own, which held the closures and what they captured through every
 * young-generation collection until a full one (measured on the token
 * endpoint: 1-2 MB promoted at each scavenge, none without;
 * bench/profile-findings.md).
 */
class LazyUnaryResponse<I extends DescMessage, O extends DescMessage> {
  readonly stream = false;
  private demuxed: [Headers, Headers] | undefined;

  constructor(
    readonly method: DescMethodUnary<I, O>,
    readonly message: MessageShape<O>,
    private readonly headers: Answer["headers"],
  ) {}

  get service(): DescMethodUnary<I, O>["parent"] {
    return this.method.parent;
  }

  get header(): Headers {
    return (this.demuxed ??= trailerDemux(this.headers))[0];
  }

  get trailer(): Headers {
    return (this.demuxed ??= trailerDemux(this.headers))[1];
  }
}

/** An answer over HTTP, or from a server of this process (whose header values may be numbers). */
interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders;
  body: Uint8Array;
}

function header(headers: Answer["headers"], name: string): string | undefined {
  const value = headers[name];
  return value === undefined ? undefined : String(value);
}

/** A call to a server of this process, bounded by the same deadline and cancellation as one over HTTP. */
function withDeadline<T>(answer: Promise<T>, timeoutMs: number | undefined, signal: AbortSignal | undefined): Promise<T> {
  if (timeoutMs === undefined && !signal) return answer;
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      finish();
      reject(ConnectError.from(getAbortSignalReason(signal!)));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        finish();
        reject(new ConnectError("the operation timed out", Code.DeadlineExceeded));
      }, timeoutMs);
    }
    answer.then(
      (value) => (finish(), resolve(value)),
      (err: unknown) => (finish(), reject(err)),
    );
  });
}

function webHeaders(nodeHeaders: Answer["headers"]): Headers {
  const [header, trailer] = trailerDemux(nodeHeaders);
  trailer.forEach((value, key) => header.append(key, value));
  return header;
}

function trailerDemux(nodeHeaders: Answer["headers"]): [Headers, Headers] {
  const header = new Headers();
  const trailer = new Headers();
  for (const [key, value] of Object.entries(nodeHeaders)) {
    if (value === undefined) continue;
    const [target, name] = key.startsWith("trailer-") ? [trailer, key.slice(8)] : [header, key];
    for (const v of Array.isArray(value) ? value : [value]) target.append(name, String(v));
  }
  return [header, trailer];
}
