// Checks every request passes before its body is read: the head is one this
// server can honour, and the path and method are routes. Each refusal is an
// answer in the one error shape (the onRequest hooks have set x-request-id).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "./errors.js";

/** The path and method of every route, for 404 against 405 with Allow. */
export class RouteTable {
  private readonly routes: { pattern: RegExp; method: string }[] = [];

  attach(app: FastifyInstance): void {
    app.addHook("onRoute", (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      const pattern = new RegExp(`^${route.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+")}$`);
      for (const method of methods) this.routes.push({ pattern, method: method.toUpperCase() });
    });
  }

  /** 404 for an unknown path, 405 (with Allow) for a known path and another method. */
  notFound(request: FastifyRequest): HttpError {
    const path = request.url.split("?")[0]!;
    const allowed = [...new Set(this.routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      return new HttpError(405, "method_not_allowed", `use ${allowed.join(", ")} on ${path}`, {
        allow: allowed.join(", "),
      });
    }
    return new HttpError(404, "not_found", `no route ${request.method} ${path}`);
  }
}

/** How many field lines of each name the request has, for the singleton fields below. */
function fieldLines(request: FastifyRequest): { host: number; authorization: number } {
  const raw = request.raw.rawHeaders;
  const count = { host: 0, authorization: 0 };
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === "host" || name === "authorization") count[name]++;
  }
  return count;
}

function singletonProblem(request: FastifyRequest): string | undefined {
  // Node keeps only the first of several Host or Authorization lines: they are counted here.
  const lines = fieldLines(request);
  // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to
  // any HTTP/1.1 request message that lacks a Host header field and to any request
  // message that contains more than one Host header field line or a Host header
  // field with an invalid field value."
  if (lines.host > 1) return "send one Host header";
  if (lines.host === 0 && request.raw.httpVersion === "1.1") return "the Host header is required";
  // RFC 9110 §5.3: "A sender MUST NOT generate multiple field lines with the same
  // name in a message [...] unless that field's definition allows multiple field
  // line values to be recombined as a comma-separated list". Authorization's
  // does not (§11.6.2: one set of credentials), so which one counts would be a guess.
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
  // RFC 9110 §15.6.6: "The 505 (HTTP Version Not Supported) status code
  // indicates that the server does not support, or refuses to support, the
  // major version of HTTP that was used in the request message." (Node's
  // parser reads an HTTP/2.0 request line as if it were HTTP/1.x.)
  if (request.raw.httpVersionMajor !== 1) {
    return new HttpError(505, "http_version_not_supported", "this server speaks HTTP/1.1 (and HTTP/1.0)", CLOSE);
  }
  const te = request.headers["transfer-encoding"];
  if (te === undefined) return undefined;
  const codings = te.split(",").map((c) => c.trim().toLowerCase());
  // RFC 9112 §6.3: "If a Transfer-Encoding header field is present in a request
  // and the chunked transfer coding is not the final encoding, the message body
  // length cannot be determined reliably; the server MUST respond with the 400
  // (Bad Request) status code and then close the connection."
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

function guard(request: FastifyRequest, routes: RouteTable): HttpError | undefined {
  const framing = framingProblem(request);
  if (framing) return framing;
  // RFC 9110 §10.1.1: "A server that receives an Expect field value containing a
  // member other than 100-continue MAY respond with a 417 (Expectation Failed)
  // status code to indicate that the unexpected expectation cannot be met."
  const expect = request.headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== "100-continue") {
    return new HttpError(417, "expectation_failed", "the only expectation this server meets is 100-continue");
  }
  const singleton = singletonProblem(request);
  if (singleton) return new HttpError(400, "invalid_request", singleton);
  // An unknown route is 404 (or 405) whatever its body: the body is not read.
  if (request.is404) return routes.notFound(request);
  // RFC 9110 §15.5.16: "If the problem was caused by an unsupported content coding,
  // the Accept-Encoding response header field (Section 12.5.3) ought to be used to
  // indicate which (if any) content codings would have been accepted in the request."
  const coding = request.headers["content-encoding"];
  if (coding !== undefined && coding.trim().toLowerCase() !== "identity" && hasBody(request)) {
    return new HttpError(
      415,
      "unsupported_media_type",
      "send the body without a content coding (Content-Encoding: identity)",
      {
        "accept-encoding": "identity",
      },
    );
  }
  return undefined;
}

/**
 * The onRequest hook refusing all of the above before the body is read; the
 * refusal goes through the route's error handler (so the token endpoint's
 * answers stay no-store).
 */
export function requestGuards(app: FastifyInstance, routes: RouteTable): void {
  app.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    done(guard(request, routes));
  });
}
