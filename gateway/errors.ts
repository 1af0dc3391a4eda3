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

// Connect codes as HTTP; any other (Unknown, Internal, DataLoss, and Unauthenticated: a service refusing
// the gateway's internal credential, never the client's fault) is 500 server_error.
const CONNECT_TO_HTTP: [number, string, Code[]][] = [
  [400, "invalid_request", [Code.InvalidArgument, Code.OutOfRange]],
  [403, "forbidden", [Code.PermissionDenied]],
  [404, "not_found", [Code.NotFound]],
  [409, "conflict", [Code.AlreadyExists, Code.FailedPrecondition, Code.Aborted]],
  [429, "rate_limited", [Code.ResourceExhausted]],
  [501, "not_implemented", [Code.Unimplemented]],
  [503, "temporarily_unavailable", [Code.Canceled, Code.DeadlineExceeded, Code.Unavailable]],
];

/** A service's failure as an answer: its message when it is the client's, never the details of ours. */
export function fromConnectError(err: ConnectError): HttpError {
  const [status, error] = CONNECT_TO_HTTP.find(([, , codes]) => codes.includes(err.code)) ?? [500, "server_error"];
  // A list's page token the service did not issue, in the client's terms (`cursor`).
  const badCursor = err.code === Code.InvalidArgument && err.rawMessage.startsWith("page_token:");
  const description = badCursor
    ? "cursor: not a cursor this server issued; start again without one"
    : status < 500
      ? err.rawMessage
      : status === 501
        ? "this operation is not available yet"
        : "the server could not complete the request; try again later";
  return new HttpError(status, error, description, status === 429 || status === 503 ? { "retry-after": "1" } : {});
}

/** The media types a route reads, for fastify's 415: its schema's consumes, else both parsed types. */
function acceptedTypes(request: FastifyRequest | undefined): string[] {
  const consumes = (request?.routeOptions?.schema as { consumes?: unknown } | undefined)?.consumes;
  return Array.isArray(consumes) && consumes.length > 0
    ? (consumes as string[])
    : ["application/json", "application/x-www-form-urlencoded"];
}

/** Fastify's own errors (body parsing, limits, content types) in our shape. */
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
