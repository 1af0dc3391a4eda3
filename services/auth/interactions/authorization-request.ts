// The authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 9700): its
// validation, and the error redirects of RFC 6749 §4.1.2.1 with RFC 9207's iss.
import {
  ClientRegistration,
  type AuthorizationParameters,
  type Client as ClientMessage,
} from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ClientLookup } from "../clients/client-resolver.js";
import { unlistedRedirectUri } from "../clients/metadata-document/document-refusal.js";
import { redirectUriMatches } from "../clients/redirect-uri.js";
import {
  InvalidRequest,
  InvalidScope,
  OAuthFailure,
  onPageOnly,
  UnauthorizedClient,
  UnsupportedResponseType,
} from "../oauth-errors.js";
import { ALL_SCOPES, isScope, scopesOrAll } from "../scopes.js";
import type { StoredParameters } from "./interaction.entity.js";
import { protectedResources } from "../../shared/protected-resources.js";
import { resourcesNamed } from "../resource-indicators.js";

export interface ValidatedRequest {
  client: ClientMessage;
  parameters: StoredParameters;
  /** The requested scopes in the server's order (the client's when the request named none). */
  scopes: string[];
}

/** A request that is valid, or where the browser goes with the error (RFC 6749 §4.1.2.1). */
type Validation = { request: ValidatedRequest; redirectTo?: undefined } | { request?: undefined; redirectTo: string };

// RFC 7636 §4.2: code-challenge = 43*128unreserved; unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~"
const CODE_CHALLENGE = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * Validates an authorization request. Throws (page only, never a redirect)
 * for an unknown client or a redirect_uri that is not registered; returns the
 * error redirect for anything else that is wrong.
 */
export async function validateAuthorizationRequest(
  findClient: ClientLookup,
  issuer: string,
  params: AuthorizationParameters,
  repeated: readonly string[],
): Promise<Validation> {
  // RFC 6749 §3.1: "Request and response parameters MUST NOT be included more
  // than once." With client_id or redirect_uri twice, no error can safely go back.
  for (const name of ["client_id", "redirect_uri"]) {
    if (repeated.includes(name)) throw onPageOnly(new InvalidRequest(`${name} was given more than once`));
  }
  // RFC 6749 §4.1.2.1: with a bad redirection URI or client identifier, the server "MUST NOT automatically
  // redirect the user-agent to the invalid redirection URI."
  if (!params.clientId) throw onPageOnly(new InvalidRequest("client_id is required"));
  const client = await findClient(params.clientId);
  if (!client) throw onPageOnly(new InvalidRequest("unknown client_id"));
  const redirectUri = resolveRedirectUri(client, params.redirectUri);
  try {
    return { request: checkRequest(client, redirectUri, params, repeated, issuer) };
  } catch (err) {
    if (err instanceof OAuthFailure && err.redirectAllowed)
      return { redirectTo: errorRedirect(redirectUri, err, params.state, issuer) };
    throw err;
  }
}

/**
 * The registered redirect URI the request names. RFC 6749 §3.1.2.3: "If
 * multiple redirection URIs have been registered [...] the client MUST include
 * a redirection URI with the authorization request"; with one, it may not.
 */
function resolveRedirectUri(client: ClientMessage, sent: string): string {
  if (!sent && client.redirectUris.length === 1) return client.redirectUris[0]!;
  if (!sent) throw onPageOnly(new InvalidRequest("redirect_uri is required"));
  if (redirectUriMatches(client.redirectUris, sent, client)) return sent;
  const byDocument = client.registration === ClientRegistration.METADATA_DOCUMENT;
  const why = byDocument ? unlistedRedirectUri(client.clientId) : "redirect_uri is not one the client registered";
  throw onPageOnly(new InvalidRequest(why));
}

function checkRequest(
  client: ClientMessage,
  redirectUri: string,
  params: AuthorizationParameters,
  repeated: readonly string[],
  issuer: string,
): ValidatedRequest {
  if (repeated.length) throw new InvalidRequest(`${clean(repeated.join(", "))} given more than once`);
  // OAuth 2.0 Multiple Response Type Encoding Practices §2.1: code's default response mode is query, the only one here.
  if (params.responseMode && params.responseMode !== "query") throw new InvalidRequest("response_mode must be query");
  // RFC 6749 §4.1.1: response_type REQUIRED. Value MUST be set to "code".
  if (!params.responseType) throw new InvalidRequest("response_type is required");
  if (params.responseType !== "code") throw new UnsupportedResponseType("response_type must be code");
  // RFC 6749 §4.1.2.1 unauthorized_client: "The client is not authorized to request an authorization code".
  if (client.grantTypes.length && !client.grantTypes.includes("authorization_code")) {
    throw new UnauthorizedClient("the client may not use the authorization_code grant");
  }
  checkPkce(client, params);
  const scopes = checkScope(client, params.scope);
  const resources = resourcesNamed(protectedResources(issuer), params.resource);
  return {
    client,
    scopes,
    parameters: {
      responseType: params.responseType,
      clientId: client.clientId,
      redirectUri,
      redirectUriSent: Boolean(params.redirectUri),
      scope: params.scope,
      state: params.state,
      codeChallenge: params.codeChallenge,
      codeChallengeMethod: params.codeChallengeMethod,
      resources,
    },
  };
}

function checkPkce(client: ClientMessage, params: AuthorizationParameters): void {
  if (!params.codeChallenge) {
    if (params.codeChallengeMethod) throw new InvalidRequest("code_challenge_method without code_challenge");
    // RFC 9700 §2.1.1: "public clients MUST use PKCE".
    if (client.public) throw new InvalidRequest("code_challenge is required (PKCE, S256) for public clients");
    return;
  }
  // RFC 7636 §4.3: code_challenge_method "Defaults to "plain""; RFC 9700 §2.1.1 rules plain out: S256 only.
  if (params.codeChallengeMethod !== "S256") throw new InvalidRequest("code_challenge_method must be S256");
  if (!CODE_CHALLENGE.test(params.codeChallenge))
    throw new InvalidRequest("code_challenge must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~");
}

/**
 * RFC 6749 §3.3: "If the client omits the scope parameter [...] the
 * authorization server MUST either process the request using a pre-defined
 * default value or fail": the default is the client's scopes.
 */
function checkScope(client: ClientMessage, scope: string): string[] {
  const requested = scope.split(" ").filter(Boolean);
  if (!requested.length) return ALL_SCOPES.filter((s) => client.scopes.includes(s));
  const refused = requested.filter((s) => !isScope(s) || !client.scopes.includes(s));
  if (refused.length) throw new InvalidScope(`scope not allowed for this client: ${clean(refused.join(" "))}`);
  return scopesOrAll(requested);
}

/** RFC 6749 §4.1.2.1: the error on the redirect URI. */
export function errorRedirect(redirectUri: string, failure: OAuthFailure, state: string, issuer: string): string {
  const error = { error: failure.error, error_description: clean(failure.description) };
  return responseRedirect(redirectUri, error, state, issuer);
}

/**
 * RFC 6749 §4.1.2: state "if the "state" parameter was present in the client
 * authorization request"; RFC 9207 §2: iss. RFC 6749 §3.1.2: the redirection
 * URI's query "MUST be retained when adding additional query parameters": the
 * registered string is kept as is (registration forbids fragments).
 */
export function responseRedirect(uri: string, params: Record<string, string>, state: string, issuer: string): string {
  const query = new URLSearchParams({ ...params, ...(state ? { state } : {}), iss: issuer }).toString();
  if (!uri.includes("?")) return `${uri}?${query}`;
  return uri.endsWith("?") || uri.endsWith("&") ? `${uri}${query}` : `${uri}&${query}`;
}

// RFC 6749 §4.1.2.1: error_description "MUST NOT include characters outside
// the set %x20-21 / %x23-5B / %x5D-7E."
const clean = (text: string) => text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "?").slice(0, 200);
