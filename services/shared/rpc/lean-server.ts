// The lean unary server: the plain case of a Connect call, served without
// connect-node's universal handler (see below for why), with the same
// protocol, interceptors and implementations.
import type http from "node:http";
import type { ServerRequest, ServerResponse } from "./listener.js";
import { clone, create, fromBinary, isMessage, toBinary, type DescMethod, type DescMethodUnary, type DescService, type Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextValues,
  createServiceImplSpec,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { CallSignal, type OnCallerGone } from "./call-signal.js";
import { PRESENTED_CREDENTIAL } from "./interceptors.js";
import { RequestHeaders } from "./request-headers.js";
import { STRINGS_CHECKED } from "./string-guard.js";
import { ResponseMetadata, ServedContext, ServedRequest, ServedResponse } from "./served-call.js";
import { codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes, type UniversalClientFn } from "./connect-internals.js";

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
 * same invocation as over HTTP (the interceptors: credential, request id, log
 * line, string guard), without the socket and without the encoding: the
 * request message goes in as a copy of the caller's, the answer comes back as
 * a copy of the handler's (neither side ever holds the other's object), an
 * error as its Connect JSON, as over HTTP. Undefined for a path it does not
 * serve that way.
 */
export type InProcessUnary = (
  path: string,
  headers: http.IncomingHttpHeaders,
  input: Message,
  signal: AbortSignal | undefined,
  /** The digest of the call's Authorization header, computed once by its client (interceptors.ts PRESENTED_CREDENTIAL). */
  credential?: Buffer,
) => Promise<ServedAnswer> | undefined;

export const leanInProcess = new WeakMap<UniversalClientFn, InProcessUnary>();

/** The lean path behind a RunningServer's `inProcess` (client.ts uses it for unary calls). */
export function inProcessUnary(server: UniversalClientFn): InProcessUnary | undefined {
  return leanInProcess.get(server);
}

export interface UnaryRoute {
  service: DescService;
  method: DescMethodUnary;
  impl: (req: unknown, ctx: HandlerContext) => unknown;
}

/** The unary methods the routes register without options of their own, by path. */
export function unaryRoutes(routes: (router: ConnectRouter) => void): Map<string, UnaryRoute> {
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
export function isPlainUnary(req: ServerRequest): boolean {
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

/** A call served: its answer message (status 200), or its error answer as it goes on the wire. */
export type ServedAnswer = { status: 200; headers: http.OutgoingHttpHeaders; message: Message } | UnaryAnswer;

export function serveUnary(route: UnaryRoute, req: ServerRequest, res: ServerResponse, interceptors: Interceptor[], readMaxBytes: number): void {
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

/** Serves one unary call from its encoded body; never rejects (a failure is its error answer). */
export async function invoke(
  route: UnaryRoute,
  requestHeaders: http.IncomingHttpHeaders,
  url: string,
  body: Uint8Array,
  interceptors: Interceptor[],
  gone: OnCallerGone,
): Promise<UnaryAnswer> {
  const decode = () => {
    try {
      return fromBinary(route.method.input, body);
    } catch (e) {
      throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
    }
  };
  const served = await serve(route, requestHeaders, url, decode, interceptors, gone);
  if (!("message" in served)) return served;
  let bytes: Uint8Array;
  try {
    bytes = toBinary(route.method.output, served.message);
  } catch (e) {
    return errorAnswer(e);
  }
  served.headers["content-type"] = contentTypeUnaryProto;
  served.headers["content-length"] = bytes.byteLength;
  return { status: 200, headers: served.headers, body: bytes };
}

/**
 * What a call of this process brings that its server need not work out
 * again: the digest of its credential (interceptors.ts PRESENTED_CREDENTIAL),
 * and that its strings were checked (string-guard.ts STRINGS_CHECKED: the
 * client refuses them before every call).
 */
interface InProcessCaller {
  credential?: Buffer;
}

/**
 * Serves one unary call of this process: a copy of `input` in, a copy of the
 * answer out (see InProcessUnary). Its caller has refused `input`'s unsafe
 * strings (client.ts does, before every call).
 */
export async function invokeInProcess(
  route: UnaryRoute,
  requestHeaders: http.IncomingHttpHeaders,
  url: string,
  input: Message,
  interceptors: Interceptor[],
  gone: OnCallerGone,
  credential?: Buffer,
): Promise<ServedAnswer> {
  const served = await serve(route, requestHeaders, url, () => clone(route.method.input, input), interceptors, gone, { credential });
  if (!("message" in served)) return served;
  const { output } = route.method;
  try {
    return { ...served, message: clone(output, served.message) };
  } catch {
    // clone() refuses what the encoding passes on changed (a lone surrogate becomes U+FFFD):
    // such an answer arrives as it would over HTTP.
    try {
      return { ...served, message: fromBinary(output, toBinary(output, served.message)) };
    } catch (e) {
      return errorAnswer(e);
    }
  }
}

/** Serves one unary call; never rejects (a failure is its error answer). */
async function serve(
  route: UnaryRoute,
  requestHeaders: http.IncomingHttpHeaders,
  url: string,
  input: () => Message,
  interceptors: Interceptor[],
  gone: OnCallerGone,
  caller?: InProcessCaller,
): Promise<ServedAnswer> {
  const { service, method } = route;
  const timeoutHeader = requestHeaders["connect-timeout-ms"];
  const deadline = typeof timeoutHeader === "string" ? Date.now() + Number(timeoutHeader) : undefined;
  const call = new CallSignal(gone, deadline);
  const header = new RequestHeaders(requestHeaders);
  const response = new ResponseMetadata();
  const implementation = async (ureq: UnaryRequest): Promise<UnaryResponse> => {
    const out = await route.impl(ureq.message, new ServedContext(ureq, call, deadline, response));
    const message = isMessage(out, method.output) ? out : create(method.output, out as never);
    return new ServedResponse(service, method, message, response);
  };
  try {
    let next = implementation as (r: UnaryRequest) => Promise<UnaryResponse>;
    for (let i = interceptors.length - 1; i >= 0; i--) next = interceptors[i]!(next as never) as typeof next;
    const values = createContextValues();
    if (caller) {
      values.set(STRINGS_CHECKED, true);
      if (caller.credential) values.set(PRESENTED_CREDENTIAL, caller.credential);
    }
    const answer = await next(new ServedRequest(service, method, url, header, values, input(), call));
    // An interceptor may answer with an object (and headers) of its own.
    if (!(answer instanceof ServedResponse)) {
      if (answer.header !== undefined && answer.header !== response.headerIfMade) answer.header.forEach((v, k) => response.header.set(k, v));
      if (answer.trailer !== undefined && answer.trailer !== response.trailerIfMade) answer.trailer.forEach((v, k) => response.trailer.set(k, v));
    }
    call.end();
    return { status: 200, headers: outgoing(response.headerIfMade, response.trailerIfMade), message: answer.message as Message };
  } catch (e) {
    call.end(e);
    return errorAnswer(e, response.headerIfMade, response.trailerIfMade);
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
