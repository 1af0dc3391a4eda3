// The HTTP/1.1 client under every Connect client between services.
//
// connect-node's own HTTP/1.1 client flushes the headers before the body and
// sends the body chunked, so a unary call leaves in three writes (headers, the
// chunk, the terminating 0-chunk), each its own TCP segment with TCP_NODELAY,
// and each a wake-up of the server (the README's Benchmark section has what
// that cost). A unary request body is one message
// (Connect protocol: "Unary-Request → Unary-Request-Headers Bare-Message"),
// so here it is read whole, sent with a Content-Length and written together
// with the headers: one write, one segment. Connections are kept alive and
// reused (one agent per client), with Nagle off.
import http from "node:http";
import https from "node:https";
import { Code, ConnectError } from "@connectrpc/connect";
import { getAbortSignalReason, type UniversalClientFn, type UniversalClientResponse } from "./connect-internals.js";

/**
 * An idle kept-alive connection is closed after this long (or the server's
 * Keep-Alive hint, when shorter): before the server's own idle timeout (65 s),
 * so that the client, not the server, ends an idle connection. Idle
 * connections do not keep a process alive (Node unrefs them).
 */
const IDLE_TIMEOUT_MS = 30_000;

export function createHttp1Client(): UniversalClientFn {
  const agentOptions: http.AgentOptions = { keepAlive: true, noDelay: true, scheduling: "lifo", timeout: IDLE_TIMEOUT_MS };
  const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };

  return async (req) => {
    const url = new URL(req.url);
    const secure = url.protocol === "https:";
    const body = req.body ? await readAll(req.body) : undefined;
    const headers: http.OutgoingHttpHeaders = {};
    req.header.forEach((value, key) => {
      headers[key] = value;
    });
    if (body) headers["content-length"] = body.byteLength;
    return new Promise<UniversalClientResponse>((resolve, reject) => {
      const signal = req.signal;
      if (signal?.aborted) return reject(getAbortSignalReason(signal));
      const nodeRequest = (secure ? https : http).request({
        agent: secure ? agents["https:"] : agents["http:"],
        protocol: url.protocol,
        hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: req.method,
        headers,
      });
      const onAbort = () => nodeRequest.destroy(signal ? (getAbortSignalReason(signal) as Error) : undefined);
      signal?.addEventListener("abort", onAbort, { once: true });
      const call: CallEnd = {
        done: () => signal?.removeEventListener("abort", onAbort),
        error: (err) => {
          call.done();
          return signal?.aborted ? getAbortSignalReason(signal) : connectErrorFromNodeReason(err);
        },
      };
      nodeRequest.on("error", (err) => reject(call.error(err)));
      nodeRequest.on("response", (res) => {
        // However the response ends (read, dropped, or never read), the call lets go of its signal.
        res.once("close", call.done);
        // An error answer that is not Connect's JSON (a proxy's 502 page): connect throws without
        // reading it, so drain it here and the kept-alive connection is free again.
        if (res.statusCode !== 200 && !String(res.headers["content-type"] ?? "").startsWith("application/json")) res.resume();
        const trailer = new Headers();
        resolve({
          status: res.statusCode ?? 0,
          header: toWebHeaders(res.headers),
          body: responseBody(res, trailer, call),
          trailer,
        });
      });
      // Headers and body in one write (Node joins them when the request ends at once).
      nodeRequest.end(body);
    });
  };
}

/** One unary call as it goes on the wire: the body whole, the headers as node:http takes them. */
export interface UnaryHttpRequest {
  url: URL;
  headers: http.OutgoingHttpHeaders;
  body: Uint8Array;
  /** The deadline: the call fails with DeadlineExceeded when it has not been answered by then. */
  timeoutMs: number | undefined;
  /** The caller's cancellation. */
  signal: AbortSignal | undefined;
}

export interface UnaryHttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The whole body (an error page too, so that the kept-alive connection is free again). */
  body: Buffer;
}

/**
 * The lean unary path under createRpcClient: one write (headers and body, with
 * a Content-Length), the answer read whole, and a deadline that is one timer
 * per call. Unlike connect's transport, no AbortController is made per call
 * and none is aborted when the call ends: `AbortController.abort()` builds a
 * DOMException with its stack, and connect's unary path makes two
 * controllers, a deadline timer and an abort per call on each side (measured
 * in the README's Benchmark section).
 */
export function createUnaryHttp1Client(readMaxBytes: number): (req: UnaryHttpRequest) => Promise<UnaryHttpResponse> {
  const agentOptions: http.AgentOptions = { keepAlive: true, noDelay: true, scheduling: "lifo", timeout: IDLE_TIMEOUT_MS };
  const agents = { "http:": new http.Agent(agentOptions), "https:": new https.Agent(agentOptions) };
  return (req) =>
    new Promise<UnaryHttpResponse>((resolve, reject) => {
      const { url, signal } = req;
      if (signal?.aborted) return reject(ConnectError.from(getAbortSignalReason(signal)));
      const secure = url.protocol === "https:";
      const headers = req.headers;
      headers["content-length"] = req.body.byteLength;
      const nodeRequest = (secure ? https : http).request({
        agent: secure ? agents["https:"] : agents["http:"],
        protocol: url.protocol,
        hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: "POST",
        headers,
      });
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err: unknown, answer?: UnaryHttpResponse) => {
        if (settled) return;
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (answer) resolve(answer);
        else reject(err);
      };
      // The request is destroyed with the reason; "error" then settles the call with it.
      const fail = (err: ConnectError) => {
        finish(err);
        nodeRequest.destroy(err);
      };
      const onAbort = () => fail(ConnectError.from(signal ? getAbortSignalReason(signal) : undefined));
      signal?.addEventListener("abort", onAbort, { once: true });
      if (req.timeoutMs !== undefined) {
        timer = setTimeout(() => fail(new ConnectError("the operation timed out", Code.DeadlineExceeded)), req.timeoutMs);
      }
      nodeRequest.on("error", (err) => finish(connectErrorFromNodeReason(err)));
      nodeRequest.on("response", (res) => {
        // An answer larger than the cap is refused, never buffered: by its declared length, or as it grows.
        const tooLarge = () => {
          fail(new ConnectError(`message size is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted));
          res.destroy();
        };
        if (Number(res.headers["content-length"] ?? 0) > readMaxBytes) return tooLarge();
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > readMaxBytes) tooLarge();
          else chunks.push(chunk);
        });
        res.on("error", (err) => finish(connectErrorFromNodeReason(err)));
        res.on("end", () =>
          finish(undefined, {
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
          }),
        );
        // A connection that ends before the answer did: the call failed.
        res.on("close", () => {
          if (!res.complete) finish(new ConnectError("connection closed before the answer ended", Code.Unavailable));
        });
      });
      // Headers and body in one write (Node joins them when the request ends at once).
      nodeRequest.end(req.body);
    });
}

interface CallEnd {
  /** Detaches from the call's signal. */
  done(): void;
  /** The error to throw: the signal's reason once it fired (deadline, cancel), else the network error mapped. */
  error(err: unknown): unknown;
}

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

async function* responseBody(res: http.IncomingMessage, trailer: Headers, call: CallEnd): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
    toWebHeaders(res.trailers).forEach((value, key) => trailer.set(key, value));
  } catch (err) {
    throw call.error(err);
  } finally {
    call.done();
    // A reader that stops early (an error answer) frees the connection by dropping it.
    if (!res.complete) res.destroy();
  }
}

function toWebHeaders(nodeHeaders: http.IncomingHttpHeaders | NodeJS.Dict<string>): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(nodeHeaders)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(key, v);
    else headers.set(key, value);
  }
  return headers;
}

/**
 * Node's network errors as Connect codes, as connect-node maps them, except a
 * connection the server reset or closed (a kept-alive connection of a server
 * that stopped or restarted): Unavailable, the transient code, not Aborted
 * (which the gateway answers as 409 conflict).
 */
function connectErrorFromNodeReason(reason: unknown): ConnectError {
  const codes = new Set<string>();
  // The error and its causes (a short chain; a cycle ends the walk).
  for (let e = reason, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string") codes.add(code);
  }
  const has = (...names: string[]) => names.some((n) => codes.has(n));
  const code = has("ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED")
    ? Code.Unavailable
    : has("ERR_STREAM_WRITE_AFTER_END", "ERR_STREAM_DESTROYED")
      ? Code.Aborted
      : Code.Internal;
  const ce = ConnectError.from(reason, code);
  if (ce !== reason) ce.cause = reason;
  return ce;
}
