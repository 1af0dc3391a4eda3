// The documentation of the OAuth 2.0 endpoints, route by route.
import { z } from "zod";
import { DEFAULT_ERROR, HEADERS, empty, error, json } from "./common.js";
import {
  AuthorizeQuery,
  ConsentRequest,
  Introspection,
  OAUTH_NO_STORE,
  ProtectedResourceMetadata,
  ServerMetadata,
  TokenRequest,
  TokenResponse,
  TokenRevocationRequest,
  htmlPage,
  invalidClient,
  oauthRateLimited,
  oauthUnavailable as unavailable,
  pageOrError,
} from "./oauth.js";

const TAGS = ["OAuth 2.0"];
const FORM_OR_JSON = ["application/x-www-form-urlencoded", "application/json"];
/** The client authenticates with HTTP Basic, or with client_id (and client_secret) in the body. */
const CLIENT_ROUTE = {
  tags: TAGS,
  security: [{ client: [] }, {}] as Record<string, string[]>[],
  consumes: FORM_OR_JSON,
};
const CACHED = {
  "cache-control": {
    type: "string",
    const: "public, max-age=300",
    description: "It may be cached for five minutes",
    required: true,
  },
};

export const TOKEN_ROUTE = {
  operationId: "token",
  summary: "Get an access token",
  description:
    "RFC 6749 §3.2. grant_type client_credentials (the client's own organisation), authorization_code (with the PKCE code_verifier) or refresh_token. The client authenticates with HTTP Basic, or client_id and client_secret in the body; a public client sends client_id only.",
  ...CLIENT_ROUTE,
  body: TokenRequest,
  response: {
    200: json(
      "The token (RFC 6749 §5.1)",
      TokenResponse,
      { access_token: "bca_2mVZcT1w9qJxLr0aP3sK", token_type: "Bearer", expires_in: 3600, scope: "contacts:read" },
      OAUTH_NO_STORE,
    ),
    400: error(
      "RFC 6749 §5.2: invalid_request, invalid_grant, unauthorized_client, unsupported_grant_type or invalid_scope; RFC 8707 §2: invalid_target",
      "invalid_request",
      "grant_type is required",
      OAUTH_NO_STORE,
    ),
    401: invalidClient,
    429: oauthRateLimited,
    503: unavailable,
    default: DEFAULT_ERROR,
  },
};

/** The answers of revocation and introspection besides their 200. */
const tokenRequestErrors = {
  400: error(
    "The token is missing, or the request is malformed",
    "invalid_request",
    "token is required",
    OAUTH_NO_STORE,
  ),
  401: invalidClient,
  429: oauthRateLimited,
  503: unavailable,
  default: DEFAULT_ERROR,
};

export const REVOKE_ROUTE = {
  operationId: "revokeToken",
  summary: "Revoke an access or refresh token",
  description: "RFC 7009. Revoking a refresh token ends the access tokens issued with it.",
  ...CLIENT_ROUTE,
  body: TokenRevocationRequest,
  response: {
    // RFC 7009 §2.2: the body is ignored by the client; `{}` suits those parsing every answer as JSON.
    200: json(
      "Revoked, or the token was not valid (RFC 7009 §2.2); the body is ignored",
      z.object({}).strict(),
      {},
      OAUTH_NO_STORE,
    ),
    ...tokenRequestErrors,
  },
};

export const INTROSPECT_ROUTE = {
  operationId: "introspectToken",
  summary: "Whether a token is active, and what it stands for",
  description: "RFC 7662, for confidential clients (authenticated with their secret).",
  ...CLIENT_ROUTE,
  body: TokenRevocationRequest,
  response: {
    200: json(
      "The token's state",
      Introspection,
      {
        active: true,
        scope: "contacts:read",
        client_id: "bc_4c1d2e9f",
        token_type: "Bearer",
        exp: 1768473000,
        iat: 1768469400,
        sub: "9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a",
        iss: "https://bizcard.example",
        aud: "https://bizcard.example",
      },
      OAUTH_NO_STORE,
    ),
    ...tokenRequestErrors,
  },
};

export const metadataRoute = (example: Record<string, unknown>) => ({
  operationId: "getAuthorizationServerMetadata",
  summary: "The authorization server's metadata",
  description: "RFC 8414: the endpoints, scopes, grant types and methods this server supports.",
  tags: TAGS,
  security: [],
  response: {
    200: json("The metadata document", ServerMetadata, example, CACHED),
    400: DEFAULT_ERROR,
    default: DEFAULT_ERROR,
  },
});

export const protectedResourceRoute = (operationId: string, summary: string, example: Record<string, unknown>) => ({
  operationId,
  summary,
  description:
    "RFC 9728: the resource's identifier, the authorization server that issues its tokens, its scopes. Every 401 and 403 of the resource names this document in WWW-Authenticate (resource_metadata).",
  tags: TAGS,
  security: [],
  response: {
    200: json("The metadata document", ProtectedResourceMetadata, example, CACHED),
    400: DEFAULT_ERROR,
    default: DEFAULT_ERROR,
  },
});

const seeOther = (description: string) =>
  empty(description, {
    location: { type: "string", description: "Where the browser goes next", required: true },
    "cache-control": HEADERS.noStore,
  });

export const AUTHORIZE_ROUTE = {
  operationId: "authorize",
  summary: "Send the user here to authorize an application",
  description:
    "RFC 6749 §4.1.1, with PKCE (RFC 7636, S256 only; required for public clients). The member signs in and consents on this server's pages; the browser then goes to redirect_uri with code, state and iss (RFC 9207), or with error. A request whose client or redirect_uri is not valid is answered with a page, never redirected.",
  tags: TAGS,
  security: [],
  querystring: AuthorizeQuery,
  response: {
    303: seeOther("To the sign-in or consent page, or back to redirect_uri (with the code, or an error)"),
    400: pageOrError(
      "The client or redirect_uri is not valid: a page saying so",
      "invalid_request",
      "the query must not contain control characters",
    ),
    404: htmlPage("The sign-in request has expired"),
    429: htmlPage("Too many attempts: a page saying when to try again"),
    default: htmlPage("A page saying the server could not complete the request"),
  },
};

export const CONSENT_ROUTE = {
  operationId: "decideConsent",
  summary: "Allow or deny an application (the consent page's decision)",
  description:
    "The consent page's form posts here (errors are pages); a client holding the member's session cookie may post the same as JSON (errors in the one error shape). Both need the page's CSRF token.",
  tags: TAGS,
  security: [],
  consumes: FORM_OR_JSON,
  body: ConsentRequest,
  response: {
    303: seeOther("Back to redirect_uri with the code (or access_denied), or to the sign-in page"),
    400: pageOrError(
      "decision or interaction_id is missing or not valid",
      "invalid_request",
      "decision must be allow or deny",
    ),
    401: error(
      "JSON: no valid session cookie",
      "login_required",
      "sign in first: a valid session cookie is required",
      OAUTH_NO_STORE,
    ),
    403: pageOrError(
      "The CSRF token is not this page's, the form token not this browser's, or the request came from another site",
      "invalid_csrf_token",
      "the form has expired; reload the page",
    ),
    404: pageOrError("The sign-in request has expired", "not_found", "the sign-in request has expired"),
    429: pageOrError("Too many attempts", "rate_limited", "too many attempts; try again later"),
    default: DEFAULT_ERROR,
  },
};
