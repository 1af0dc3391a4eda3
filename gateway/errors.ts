// The one place that writes errors. Every error a client sees has the body
// {"error": "<code>", "error_description": "<human text>"} and an honest
// status; nothing unexpected leaks: it is logged and becomes server_error.
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = "HttpError";
  }
}

/** Connect codes as HTTP: the mapping every route uses. */
const CONNECT_TO_HTTP: Record<Code, { status: number; error: string }> = {
  [Code.Canceled]: { status: 503, error: "temporarily_unavailable" },
  [Code.Unknown]: { status: 500, error: "server_error" },
  [Code.InvalidArgument]: { status: 400, error: "invalid_request" },
  [Code.DeadlineExceeded]: { status: 503, error: "temporarily_unavailable" },
  [Code.NotFound]: { status: 404, error: "not_found" },
  [Code.AlreadyExists]: { status: 409, error: "conflict" },
  // A member's wrong email or password, a caller not allowed to act: the client's answer.
  [Code.PermissionDenied]: { status: 403, error: "forbidden" },
  [Code.ResourceExhausted]: { status: 429, error: "rate_limited" },
  [Code.FailedPrecondition]: { status: 409, error: "conflict" },
  [Code.Aborted]: { status: 409, error: "conflict" },
  [Code.OutOfRange]: { status: 400, error: "invalid_request" },
  [Code.Unimplemented]: { status: 501, error: "not_implemented" },
  [Code.Internal]: { status: 500, error: "server_error" },
  [Code.Unavailable]: { status: 503, error: "temporarily_unavailable" },
  [Code.DataLoss]: { status: 500, error: "server_error" },
  // UNAUTHENTICATED means one thing only: a service refused the gateway's internal
  // credential. That is a server misconfiguration, never the client's fault, and its
  // details are not shown. A client's own failures (invalid_client, invalid_token) come
  // as an OAuthError detail, which gateway/oauth-errors.ts turns into 400/401.
  [Code.Unauthenticated]: { status: 500, error: "server_error" },
};

const SAFE_TO_SHOW = new Set([
  Code.InvalidArgument,
  Code.NotFound,
  Code.AlreadyExists,
  Code.FailedPrecondition,
  Code.OutOfRange,
  Code.PermissionDenied,
]);

export function fromConnectError(err: ConnectError): HttpError {
  const mapped = CONNECT_TO_HTTP[err.code] ?? CONNECT_TO_HTTP[Code.Internal];
  const description = SAFE_TO_SHOW.has(err.code)
    ? err.rawMessage
    : mapped.status >= 500
      ? mapped.status === 501
        ? "this operation is not available yet"
        : "the server could not complete the request; try again later"
      : err.rawMessage;
  const headers: Record<string, string> = mapped.status === 429 || mapped.status === 503 ? { "retry-after": "1" } : {};
  return new HttpError(mapped.status, mapped.error, description, headers);
}

/** The body types a route takes when its schema does not say (body-parsers.ts parses both). */
const ANY_BODY = ["application/json", "application/x-www-form-urlencoded"];

/**
 * The media types a route reads: its schema's consumes (the OpenAPI document's
 * requestBody), else both parsed types. A JSON-only route refuses a form body
 * itself, so fastify's 415 for a type no parser takes (text/plain) must not
 * offer the form encoding there either.
 */
function acceptedTypes(request: FastifyRequest | undefined): string[] {
  const consumes = (request?.routeOptions?.schema as { consumes?: unknown } | undefined)?.consumes;
  return Array.isArray(consumes) && consumes.length > 0 ? (consumes as string[]) : ANY_BODY;
}

/** Fastify's own errors (body parsing, limits, content types) in our shape; the request names the route's media types. */
function fromFastifyError(
  err: { code?: string; statusCode?: number; message: string },
  request?: FastifyRequest,
): HttpError | undefined {
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new HttpError(413, "payload_too_large", "the request body is larger than 64 KiB");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new HttpError(415, "unsupported_media_type", `send the body as ${acceptedTypes(request).join(" or ")}`);
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new HttpError(400, "invalid_request", "the JSON body is empty");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new HttpError(400, "invalid_request", "the Content-Length does not match the body");
  }
  if (err.statusCode === 400 || err instanceof SyntaxError) {
    return new HttpError(400, "invalid_request", "the request body could not be parsed");
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    return new HttpError(err.statusCode, "invalid_request", err.message);
  }
  return undefined;
}

export function toHttpError(err: unknown, request?: FastifyRequest): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (err instanceof ConnectError) return fromConnectError(err);
  if (err && typeof err === "object" && "message" in err) return fromFastifyError(err as { message: string }, request);
  return undefined;
}

/** An error answer is about this request only: never stored by a cache (RFC 9111 §5.2.2.5). */
export function sendError(reply: FastifyReply, err: HttpError): FastifyReply {
  return reply
    .status(err.status)
    .header("cache-control", "no-store")
    .headers(err.headers)
    .type("application/json; charset=utf-8")
    .send({ error: err.error, error_description: err.description });
}

export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const known = toHttpError(err, request);
  if (known && known.status < 500) return sendError(reply, known);
  request.log.error({ err }, "request failed");
  return sendError(
    reply,
    known ?? new HttpError(500, "server_error", "the server could not complete the request; try again later"),
  );
}
