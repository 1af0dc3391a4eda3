// The OAuth 2.0 endpoints' requests and answers. Their parameters follow RFC
// 6749's rules (oauth-params.ts) and the auth service judges them, so these
// request schemas document and do not validate.
import { z } from "zod";
import { ALL_SCOPES } from "../../services/auth/scopes.js";
import { GRANT_TYPES } from "../../services/auth/clients/grant-types.js";
import { documentOnly } from "../validation.js";
import { HEADERS, error, type HeaderSpec, type Response } from "./common.js";

const scopeList = `Space-separated scopes: ${ALL_SCOPES.join(", ")}`;

/** RFC 8707: a string, or (JSON) an array of strings; in a form, the parameter repeated. */
const resourceIndicator = (description: string) =>
  z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(description);

const clientCredentials = {
  client_id: z
    .string()
    .optional()
    .describe("The client's id, when not sent with HTTP Basic (a public client sends only this)"),
  client_secret: z.string().optional().describe("client_secret_post: the secret, when not sent with HTTP Basic"),
};

export const TokenRequest = documentOnly(
  z
    .object({
      grant_type: z.enum(GRANT_TYPES),
      code: z.string().optional().describe("authorization_code: the code from the redirect"),
      redirect_uri: z.string().optional().describe("authorization_code: the redirect_uri of the authorization request"),
      code_verifier: z.string().optional().describe("authorization_code: the PKCE verifier (RFC 7636)"),
      refresh_token: z.string().optional().describe("refresh_token: the refresh token"),
      scope: z
        .string()
        .optional()
        .describe(`client_credentials, refresh_token: ${scopeList}; all the client may have when left out`),
      resource: resourceIndicator(
        "RFC 8707: the protected resource the token is for: PUBLIC_URL (the REST API, the default) or PUBLIC_URL/mcp. One resource per token (several distinct ones: invalid_target); authorization_code and refresh_token: one the authorization request named, and a refresh without it keeps the token's",
      ),
      ...clientCredentials,
    })
    .describe("RFC 6749 §3.2: form-encoded (or JSON); each parameter at most once, unknown ones ignored")
    .meta({ examples: [{ grant_type: "client_credentials", scope: "contacts:read webhooks:read webhooks:write" }] }),
);

export const TokenResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal("Bearer"),
    expires_in: z.number().int().positive().describe("Seconds the access token is valid"),
    refresh_token: z.string().optional().describe("authorization_code and refresh_token grants: a new refresh token"),
    scope: z.string().optional().describe("The scopes granted"),
  })
  .meta({ id: "TokenResponse", description: "RFC 6749 §5.1" });

export const TokenRevocationRequest = documentOnly(
  z
    .object({
      token: z.string().describe("The access or refresh token"),
      token_type_hint: z.enum(["access_token", "refresh_token"]).optional(),
      ...clientCredentials,
    })
    .describe("RFC 7009 §2.1 (or RFC 7662 §2.1): form-encoded (or JSON), with the client's credentials")
    .meta({ examples: [{ token: "bca_2mVZcT1w9qJxLr0aP3sK", token_type_hint: "access_token" }] }),
);

export const Introspection = z
  .object({
    active: z.boolean(),
    scope: z.string().optional(),
    client_id: z.string().optional(),
    token_type: z.string().optional(),
    exp: z.number().int().optional(),
    iat: z.number().int().optional(),
    sub: z.string().optional().describe("The organisation the token acts for"),
    iss: z.string().optional(),
    aud: z
      .string()
      .optional()
      .describe("RFC 8707: the resource identifier the token is for (PUBLIC_URL or PUBLIC_URL/mcp)"),
  })
  .meta({ id: "Introspection", description: 'RFC 7662 §2.2: an inactive token is only {"active": false}' });

export const ServerMetadata = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    revocation_endpoint: z.string(),
    introspection_endpoint: z.string(),
    scopes_supported: z.array(z.string()),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    authorization_response_iss_parameter_supported: z.boolean(),
    registration_endpoint: z
      .string()
      .optional()
      .describe("RFC 7591 dynamic registration; present only when it is turned on"),
    client_id_metadata_document_supported: z
      .boolean()
      .optional()
      .describe(
        "An https URL may be used as client_id: it names the client's metadata document (Client ID Metadata Documents)",
      ),
  })
  .describe("RFC 8414 §2");

export const ProtectedResourceMetadata = z
  .object({
    resource: z.string().describe("The resource identifier: what a token request names as resource (RFC 8707)"),
    authorization_servers: z.array(z.string()).describe("The issuer of the tokens this resource accepts"),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .describe("RFC 9728 §2");

export const AuthorizeQuery = documentOnly(
  z.object({
    response_type: z.literal("code"),
    client_id: z.string(),
    redirect_uri: z
      .string()
      .optional()
      .describe("One of the client's registered redirect URIs (required when it has several)"),
    scope: z.string().optional().describe(scopeList),
    state: z.string().optional().describe("Returned unchanged with the code"),
    code_challenge: z
      .string()
      .optional()
      .describe("RFC 7636: BASE64URL(SHA256(code_verifier)); required for a public client"),
    code_challenge_method: z.literal("S256").optional().describe("S256 only; required with code_challenge"),
    response_mode: z.literal("query").optional(),
    resource: resourceIndicator(
      "RFC 8707, repeatable: the protected resources the tokens may be for, PUBLIC_URL (the REST API) and/or PUBLIC_URL/mcp; none: the REST API. One resource per token: the token request picks one",
    ),
  }),
);

export const ConsentRequest = documentOnly(
  z
    .object({
      interaction_id: z.string().describe("The sign-in request the consent page showed"),
      csrf_token: z.string().describe("The consent page's CSRF token"),
      form_token: z
        .string()
        .optional()
        .describe(
          "The form's browser token, equal to the bizcard_form cookie the page set; required with a form body, not with JSON",
        ),
      decision: z.enum(["allow", "deny"]),
    })
    .describe("The consent page's form, or JSON from a client holding the member's session cookie")
    .meta({ examples: [{ interaction_id: "f1e2d3c4b5a6", csrf_token: "c2VjcmV0LWNzcmY", decision: "allow" }] }),
);

/** RFC 6749 §5.1: "Cache-Control: no-store" and "Pragma: no-cache" on every answer. */
export const OAUTH_NO_STORE: Record<string, HeaderSpec> = {
  "cache-control": HEADERS.noStore,
  pragma: { type: "string", const: "no-cache", description: "RFC 6749 §5.1", required: true },
};

export const invalidClient = error(
  "The client could not be authenticated (RFC 6749 §5.2)",
  "invalid_client",
  "client authentication failed",
  {
    ...OAUTH_NO_STORE,
    "www-authenticate": { ...HEADERS.wwwAuthenticate, description: 'Basic realm="bizcard", charset="UTF-8"' },
  },
);

export const oauthUnavailable = error(
  "The auth service is not answering",
  "temporarily_unavailable",
  "the server could not complete the request; try again later",
  { ...OAUTH_NO_STORE, "retry-after": HEADERS.retryAfter },
);

export const oauthRateLimited = error(
  "Too many failed attempts; wait as Retry-After says",
  "rate_limited",
  "too many attempts; try again later",
  { ...OAUTH_NO_STORE, "retry-after": HEADERS.retryAfter },
);

/** An HTML page (the authorization endpoint's answers to a person's browser). */
export function htmlPage(description: string): Response {
  return {
    description,
    content: { "text/html": { schema: z.string(), example: '<!doctype html><html lang="en">…</html>' } },
  };
}

/** An answer that is an HTML page to a browser's form and the one error shape to a JSON request. */
export const pageOrError = (description: string, code: string, text: string): Response => ({
  description,
  content: { ...htmlPage(description).content, ...error(description, code, text).content },
});
