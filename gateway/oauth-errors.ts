// RFC 6749 §5.2 error responses for the OAuth endpoints: 400 with
// {"error", "error_description"}, or 401 plus WWW-Authenticate for
// invalid_client; never cached.
import { ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { OAuthErrorSchema } from "../gen/bizcard/auth/v1/auth_pb.js";
import { errorHandler, fromConnectError, sendError, HttpError } from "./errors.js";

export class OAuthError extends HttpError {
  constructor(error: string, description: string, status = 400, headers: Record<string, string> = {}) {
    super(status, error, description, headers);
  }
}

export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const;

// RFC 6749 §5.2 invalid_client: via the "Authorization" header, "MUST respond with an HTTP 401
// (Unauthorized) status code and include the "WWW-Authenticate" response header field".
export function invalidClient(description: string): OAuthError {
  return new OAuthError("invalid_client", description, 401, {
    "www-authenticate": 'Basic realm="bizcard", charset="UTF-8"',
  });
}

/** An OAuth error from the auth service's details, or the generic mapping. */
export function oauthErrorFrom(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (!(err instanceof ConnectError)) return undefined;
  const [detail] = err.findDetails(OAuthErrorSchema);
  if (!detail) return fromConnectError(err);
  const { error, errorDescription: description } = detail;
  if (detail.retryAfterSeconds > 0) {
    return new OAuthError(error, description, 429, { "retry-after": String(detail.retryAfterSeconds) });
  }
  if (error === "invalid_client") return invalidClient(description);
  // RFC 6750 §3: an invalid access token "MUST include the HTTP "WWW-Authenticate" response header field".
  if (error === "invalid_token") {
    return new OAuthError(error, description, 401, {
      "www-authenticate": 'Bearer realm="bizcard", error="invalid_token"',
    });
  }
  return new OAuthError(error, description);
}

/** Error handler for OAuth routes: RFC 6749 bodies, no-store, anything else via the common handler. */
export function oauthErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.headers(NO_STORE);
  const known = oauthErrorFrom(err);
  if (known && known.status < 500) return sendError(reply, known);
  return errorHandler(err, request, reply);
}
