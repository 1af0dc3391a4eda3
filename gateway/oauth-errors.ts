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

/**
 * RFC 6749 §5.2 invalid_client: "the authorization server MAY return an HTTP
 * 401 (Unauthorized) status code to indicate which HTTP authentication schemes
 * are supported. If the client attempted to authenticate via the
 * "Authorization" request header field, the authorization server MUST respond
 * with an HTTP 401 (Unauthorized) status code and include the
 * "WWW-Authenticate" response header field matching the authentication scheme
 * used by the client."
 */
export function invalidClient(description: string): OAuthError {
  return new OAuthError("invalid_client", description, 401, {
    "www-authenticate": 'Basic realm="bizcard", charset="UTF-8"',
  });
}

/**
 * RFC 6750 §3.1 invalid_token: "The access token provided is expired, revoked,
 * malformed, or invalid for other reasons. The resource SHOULD respond with
 * the HTTP 401 (Unauthorized) status code." §3: "If the protected resource
 * request [...] contains an invalid access token, the resource server [...]
 * MUST include the HTTP "WWW-Authenticate" response header field".
 */
export function invalidToken(description: string): OAuthError {
  return new OAuthError("invalid_token", description, 401, {
    "www-authenticate": 'Bearer realm="bizcard", error="invalid_token"',
  });
}

/** An OAuth error from the auth service's details, or the generic mapping. */
export function oauthErrorFrom(err: unknown): HttpError | undefined {
  if (err instanceof HttpError) return err;
  if (!(err instanceof ConnectError)) return undefined;
  const [detail] = err.findDetails(OAuthErrorSchema);
  if (detail) {
    if (detail.retryAfterSeconds > 0) {
      return new OAuthError(detail.error, detail.errorDescription, 429, {
        "retry-after": String(detail.retryAfterSeconds),
      });
    }
    if (detail.error === "invalid_client") return invalidClient(detail.errorDescription);
    if (detail.error === "invalid_token") return invalidToken(detail.errorDescription);
    return new OAuthError(detail.error, detail.errorDescription);
  }
  return fromConnectError(err);
}

/** Error handler for OAuth routes: RFC 6749 bodies, no-store, anything else via the common handler. */
export function oauthErrorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.headers(NO_STORE);
  const known = oauthErrorFrom(err);
  if (known && known.status < 500) return sendError(reply, known);
  return errorHandler(err, request, reply);
}
