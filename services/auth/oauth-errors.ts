// The OAuth errors of the auth service, one class each (node-oidc-provider's
// shape), and the one place that turns them into what crosses the RPC: a
// ConnectError whose details hold an OAuthError (proto/bizcard/auth/v1,
// "ERRORS"), from which the gateway writes the RFC 6749 body. Anything that
// is not one of these becomes server_error there (an INTERNAL ConnectError).
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rateLimitRefusals } from "../shared/metrics/metrics.js";

export abstract class OAuthFailure extends Error {
  abstract readonly error: string;
  /** The Connect code the error crosses the RPC with. */
  readonly code: Code = Code.InvalidArgument;
  /** RFC 6749 §4.1.2.1: may the authorization request's error go back to the client's redirect_uri? */
  redirectAllowed = true;
  retryAfterSeconds = 0;

  constructor(readonly description: string) {
    super(description);
    this.name = new.target.name;
  }

  toConnectError(): ConnectError {
    const detail = create(OAuthErrorSchema, {
      error: this.error,
      errorDescription: this.description,
      redirectAllowed: this.redirectAllowed,
      retryAfterSeconds: this.retryAfterSeconds,
    });
    return new ConnectError(`${this.error}: ${this.description}`, this.code, undefined, [
      { desc: OAuthErrorSchema, value: detail },
    ]);
  }
}

// RFC 6749 §5.2 and §4.1.2.1.
export class InvalidRequest extends OAuthFailure {
  readonly error = "invalid_request";
}
export class InvalidClient extends OAuthFailure {
  readonly error = "invalid_client";
  override readonly code = Code.PermissionDenied;
}
export class InvalidGrant extends OAuthFailure {
  readonly error = "invalid_grant";
}
export class UnauthorizedClient extends OAuthFailure {
  readonly error = "unauthorized_client";
  override readonly code = Code.PermissionDenied;
}
export class UnsupportedGrantType extends OAuthFailure {
  readonly error = "unsupported_grant_type";
}
export class InvalidScope extends OAuthFailure {
  readonly error = "invalid_scope";
}
export class UnsupportedResponseType extends OAuthFailure {
  readonly error = "unsupported_response_type";
}
// RFC 8707 §2: "The requested resource is invalid, missing, unknown, or malformed."
export class InvalidTarget extends OAuthFailure {
  readonly error = "invalid_target";
}
export class AccessDenied extends OAuthFailure {
  readonly error = "access_denied";
  override readonly code = Code.PermissionDenied;
}
// RFC 6750 §3.1.
export class InvalidToken extends OAuthFailure {
  readonly error = "invalid_token";
  override readonly code = Code.PermissionDenied;
}
// RFC 7591 §3.2.2: "invalid_redirect_uri: The value of one or more
// redirection URIs is invalid." "invalid_client_metadata: The value of one of
// the client metadata fields is invalid and the server has rejected this
// request."
export class InvalidRedirectUri extends OAuthFailure {
  readonly error = "invalid_redirect_uri";
}
export class InvalidClientMetadata extends OAuthFailure {
  readonly error = "invalid_client_metadata";
}
// The pages' own failures (not RFC 6749 codes; the gateway shows them on a page).
export class InvalidCredentials extends OAuthFailure {
  readonly error = "invalid_credentials";
  override readonly code = Code.PermissionDenied;
}
export class InvalidCsrfToken extends OAuthFailure {
  readonly error = "invalid_csrf_token";
  override readonly code = Code.PermissionDenied;
}
export class LoginRequired extends OAuthFailure {
  readonly error = "login_required";
  override readonly code = Code.PermissionDenied;
}

/** An error shown on a page, never sent to the redirect_uri (unknown client, unregistered redirect_uri). */
export function onPageOnly<E extends OAuthFailure>(failure: E): E {
  failure.redirectAllowed = false;
  return failure;
}

/** Rate limited: RESOURCE_EXHAUSTED carrying the error the request would have had and Retry-After. */
export function rateLimited(error: "invalid_client" | "invalid_credentials", retryAfterSeconds: number): ConnectError {
  rateLimitRefusals.inc({ limit: error === "invalid_client" ? "client" : "login" });
  const detail = create(OAuthErrorSchema, {
    error,
    errorDescription: "too many failed attempts; try again later",
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)),
  });
  return new ConnectError("too many failed attempts", Code.ResourceExhausted, undefined, [
    { desc: OAuthErrorSchema, value: detail },
  ]);
}

/** The limits on requests that are no failures (rate-limit/address-limit.ts). */
export type RequestLimitName = "registration" | "metadata_fetch";

/** Too many requests that were not failures (registrations, metadata document fetches): RESOURCE_EXHAUSTED, error rate_limited, and Retry-After. */
export function tooManyRequests(limit: RequestLimitName, description: string, retryAfterSeconds: number): ConnectError {
  rateLimitRefusals.inc({ limit });
  const detail = create(OAuthErrorSchema, {
    error: "rate_limited",
    errorDescription: description,
    retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)),
  });
  return new ConnectError(description, Code.ResourceExhausted, undefined, [{ desc: OAuthErrorSchema, value: detail }]);
}

/**
 * For a handler's catch: OAuth failures become their ConnectError; a
 * ConnectError passes through; anything else is rethrown as is, and the RPC
 * server logs it and answers INTERNAL (the gateway's server_error).
 */
export function asConnectError(err: unknown): unknown {
  return err instanceof OAuthFailure ? err.toConnectError() : err;
}

/** Wraps an RPC handler so that OAuth failures thrown anywhere in it cross the RPC with their detail. */
export function oauthHandler<A extends unknown[], R>(handler: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await handler(...args);
    } catch (err) {
      throw asConnectError(err);
    }
  };
}
