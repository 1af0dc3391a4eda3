// Checks every request passes before its body is read: a head this server can
// honour, and a path and method that are routes; each refusal in the one error shape.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";

function singletonProblem(request: FastifyRequest): string | undefined {
  // Node keeps only the first of several Host or Authorization lines: they are counted here.
  const raw = request.raw.rawHeaders;
  const lines = { host: 0, authorization: 0 };
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === "host" || name === "authorization") lines[name]++;
  }
  // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1
  // request message that lacks a Host header field and to any request message that contains
  // more than one Host header field line".
  if (lines.host > 1) return "send one Host header";
  if (lines.host === 0 && request.raw.httpVersion === "1.1") return "the Host header is required";
  // RFC 9110 §5.3: no field lines of one name unless they may be combined; Authorization's may
  // not (one set of credentials), so which one counts would be a guess.
  if (lines.authorization > 1) return "send one Authorization header: a request carries one set of credentials";
  return undefined;
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

// What follows an answer on such a connection cannot be framed: it is closed.
const CLOSE = { connection: "close" };

/** The HTTP version and the body's framing: refusals after which the connection closes. */
function framingProblem(request: FastifyRequest): HttpError | undefined {
  // RFC 9110 §15.6.6: 505, "the server does not support [...] the major version of HTTP"
  // (node's parser reads an HTTP/2.0 request line as if it were HTTP/1.x).
  if (request.raw.httpVersionMajor !== 1) {
    return new HttpError(505, "http_version_not_supported", "this server speaks HTTP/1.1 (and HTTP/1.0)", CLOSE);
  }
  const te = request.headers["transfer-encoding"];
  if (te === undefined) return undefined;
  const codings = te.split(",").map((c) => c.trim().toLowerCase());
  // RFC 9112 §6.3: "the chunked transfer coding is not the final encoding [...] the server MUST
  // respond with the 400 (Bad Request) status code and then close the connection."
  if (codings.at(-1) !== "chunked") {
    return new HttpError(400, "invalid_request", "the Transfer-Encoding must end with chunked, applied once", CLOSE);
  }
  // RFC 9112 §6.1: "A server that receives a request message with a transfer
  // coding it does not understand SHOULD respond with 501 (Not Implemented)."
  if (codings.length !== 1) {
    return new HttpError(
      501,
      "not_implemented",
      "the only transfer coding this server reads is chunked (Transfer-Encoding: chunked)",
      CLOSE,
    );
  }
  return undefined;
}

function guard(request: FastifyRequest, notFound: (request: FastifyRequest) => HttpError): HttpError | undefined {
  const framing = framingProblem(request);
  if (framing) return framing;
  // RFC 9110 §10.1.1: "a member other than 100-continue MAY respond with a 417 (Expectation Failed)".
  const expect = request.headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== "100-continue") {
    return new HttpError(417, "expectation_failed", "the only expectation this server meets is 100-continue");
  }
  const singleton = singletonProblem(request);
  if (singleton) return new HttpError(400, "invalid_request", singleton);
  // An unknown route is 404 (or 405) whatever its body: the body is not read.
  if (request.is404) return notFound(request);
  // RFC 9110 §15.5.16: for an unsupported content coding, "the Accept-Encoding response header
  // field [...] ought to be used to indicate which (if any) content codings would have been accepted".
  const coding = request.headers["content-encoding"];
  if (coding !== undefined && coding.trim().toLowerCase() !== "identity" && hasBody(request)) {
    const description = "send the body without a content coding (Content-Encoding: identity)";
    return new HttpError(415, "unsupported_media_type", description, { "accept-encoding": "identity" });
  }
  return undefined;
}

/**
 * Refuses all of the above before the body is read, through the route's error
 * handler (the OAuth answers stay no-store). Returns the answer to a request no
 * route takes: 404, or 405 with Allow for a known path and another method.
 */
export function requestGuards(app: FastifyInstance): (request: FastifyRequest) => HttpError {
  const routes: { pattern: RegExp; method: string }[] = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(`^${route.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+")}$`);
    for (const method of methods) routes.push({ pattern, method: method.toUpperCase() });
  });
  const notFound = (request: FastifyRequest): HttpError => {
    const path = request.url.split("?")[0]!;
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length === 0) return new HttpError(404, "not_found", `no route ${request.method} ${path}`);
    const allow = allowed.join(", ");
    return new HttpError(405, "method_not_allowed", `use ${allow} on ${path}`, { allow });
  };
  app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    done(guard(request, notFound));
  });
  return notFound;
}
