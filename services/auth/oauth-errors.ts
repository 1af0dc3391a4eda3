// The auth service's OAuth errors, one class each, and the one place that
// turns them into what crosses the RPC: a ConnectError whose details hold an
// OAuthError (proto/bizcard/auth/v1, "ERRORS"), from which the gateway writes
// the RFC 6749 body. Anything else becomes server_error there (INTERNAL).
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rateLimitRefusals } from "../shared/metrics/metrics.js";

export abstract class OAuthFailure extends Error {
  abstract readonly error: string;
  /** The Connect code the error crosses the RPC with. */
  abstract readonly code: Code;
  /** RFC 6749 §4.1.2.1: may the authorization request's error go back to the client's redirect_uri? */
  redirectAllowed = true;

  constructor(readonly description: string) {
    super(description);
    this.name = new.target.name;
  }

  toConnectError(): ConnectError {
    const detail = { error: this.error, errorDescription: this.description, redirectAllowed: this.redirectAllowed };
    return withDetail(`${this.error}: ${this.description}`, this.code, detail);
  }
}

function failure(error: string, code: Code = Code.InvalidArgument) {
  return class extends OAuthFailure {
    readonly error = error;
    readonly code = code;
  };
}

// RFC 6749 §5.2 and §4.1.2.1.
export class InvalidRequest extends failure("invalid_request") {}
export class InvalidClient extends failure("invalid_client", Code.PermissionDenied) {}
export class InvalidGrant extends failure("invalid_grant") {}
export class UnauthorizedClient extends failure("unauthorized_client", Code.PermissionDenied) {}
export class UnsupportedGrantType extends failure("unsupported_grant_type") {}
export class InvalidScope extends failure("invalid_scope") {}
export class UnsupportedResponseType extends failure("unsupported_response_type") {}
export class AccessDenied extends failure("access_denied", Code.PermissionDenied) {}
// RFC 8707 §2: "The requested resource is invalid, missing, unknown, or malformed."
export class InvalidTarget extends failure("invalid_target") {}
// RFC 6750 §3.1.
export class InvalidToken extends failure("invalid_token", Code.PermissionDenied) {}
// RFC 7591 §3.2.2.
export class InvalidRedirectUri extends failure("invalid_redirect_uri") {}
export class InvalidClientMetadata extends failure("invalid_client_metadata") {}
// The pages' own failures (not RFC 6749 codes; the gateway shows them on a page).
export class InvalidCredentials extends failure("invalid_credentials", Code.PermissionDenied) {}
export class InvalidCsrfToken extends failure("invalid_csrf_token", Code.PermissionDenied) {}
export class LoginRequired extends failure("login_required", Code.PermissionDenied) {}

/** An error shown on a page, never sent to the redirect_uri (unknown client, unregistered redirect_uri). */
export function onPageOnly<E extends OAuthFailure>(failure: E): E {
  failure.redirectAllowed = false;
  return failure;
}

/** Rate limited: RESOURCE_EXHAUSTED carrying the error the request would have had and Retry-After. */
export function rateLimited(error: "invalid_client" | "invalid_credentials", retryAfterSeconds: number): ConnectError {
  rateLimitRefusals.inc({ limit: error === "invalid_client" ? "client" : "login" });
  const description = "too many failed attempts; try again later";
  return exhausted("too many failed attempts", error, description, retryAfterSeconds);
}

/** The limits on requests that are no failures (rate-limit/address-limit.ts). */
export type RequestLimitName = "registration" | "metadata_fetch";

/** Too many requests that were not failures (registrations, document fetches): error rate_limited, and Retry-After. */
export function tooManyRequests(limit: RequestLimitName, description: string, retryAfterSeconds: number): ConnectError {
  rateLimitRefusals.inc({ limit });
  return exhausted(description, "rate_limited", description, retryAfterSeconds);
}

function exhausted(message: string, error: string, errorDescription: string, retryAfterSeconds: number) {
  const retry = Math.max(1, Math.ceil(retryAfterSeconds));
  return withDetail(message, Code.ResourceExhausted, { error, errorDescription, retryAfterSeconds: retry });
}

function withDetail(message: string, code: Code, detail: MessageInitShape<typeof OAuthErrorSchema>) {
  const value = create(OAuthErrorSchema, detail);
  return new ConnectError(message, code, undefined, [{ desc: OAuthErrorSchema, value }]);
}

/**
 * Wraps an RPC handler so that OAuth failures thrown anywhere in it cross the
 * RPC with their detail. Anything else is rethrown as is: the RPC server logs
 * it and answers INTERNAL.
 */
export function oauthHandler<A extends unknown[], R>(handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await handler(...args);
    } catch (err) {
      throw err instanceof OAuthFailure ? err.toConnectError() : err;
    }
  };
}
