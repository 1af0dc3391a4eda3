// RFC 7591 §2 client metadata of a self-registered client, checked: what
// RegisterClient stores. Redirect URIs follow the operator clients' rules
// (redirect-uri.ts) plus application_type's; problems are
// invalid_redirect_uri, every other one invalid_client_metadata (RFC 7591 §3.2.2).
import { ConnectError } from "@connectrpc/connect";
import type { RegisterClientRequest } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { InvalidClientMetadata, InvalidRedirectUri } from "../oauth-errors.js";
import { ALL_SCOPES, isScope, scopesOrAll } from "../scopes.js";
import type { GrantType } from "./grant-types.js";
import { checkRedirectUri, LOOPBACK } from "./redirect-uri.js";

const AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"] as const;
type TokenEndpointAuthMethod = (typeof AUTH_METHODS)[number];

/** What a self-registered client may use: it acts for whichever organisation consents, never for one of its own. */
const SELF_REGISTERED_GRANTS: readonly string[] = ["authorization_code", "refresh_token"] satisfies GrantType[];

const MAX_REDIRECT_URIS = 10;

/** A client name of at most 100 characters, none of them a control character. */
export const isPrintableName = (name: string): boolean =>
  [...name].length <= 100 && !/[\u0000-\u001f\u007f]/.test(name);

/**
 * A loopback http(s) URL, or a private-use scheme (com.example.app:/cb): where only a native app can receive a code.
 */
function isNativeRedirect(uri: string): boolean {
  const url = new URL(uri);
  return (url.protocol !== "http:" && url.protocol !== "https:") || LOOPBACK.has(url.hostname);
}

function checkName(value: string | undefined, redirectUris: string[]): string {
  // Absent: the first redirect URI's host name (or private-use scheme).
  if (value === undefined) {
    const url = new URL(redirectUris[0]!);
    return url.hostname || url.protocol.replace(/:$/, "");
  }
  const name = value.trim();
  if (!name) throw new InvalidClientMetadata("client_name: must not be empty when given");
  if (!isPrintableName(name)) throw new InvalidClientMetadata("client_name: at most 100 printable characters");
  return name;
}

function checkClientUri(value: string | undefined, allowInsecure: boolean): string | null {
  if (value === undefined) return null;
  const url = value.length <= 2048 && !/[\s\u0000-\u001f\u007f]/.test(value) ? URL.parse(value) : null;
  const secure =
    url?.protocol === "https:" || (url?.protocol === "http:" && (allowInsecure || LOOPBACK.has(url.hostname)));
  if (!url || !secure || url.username || url.password)
    throw new InvalidClientMetadata("client_uri: must be an https URL of at most 2048 characters");
  return value;
}

function checkGrants(grantTypes: string[] | undefined, responseTypes: string[] | undefined): GrantType[] {
  // RFC 7591 §2 grant_types: "If omitted, the default behavior is that the
  // client will use only the "authorization_code" Grant Type."
  const grants = grantTypes ? [...new Set(grantTypes)] : ["authorization_code"];
  if (grants.includes("client_credentials")) {
    throw new InvalidClientMetadata(
      "grant_types: client_credentials acts for an organisation; a self-registered client cannot use it",
    );
  }
  const other = grants.filter((g) => !SELF_REGISTERED_GRANTS.includes(g));
  if (other.length)
    throw new InvalidClientMetadata(
      `grant_types: unsupported ${other.join(", ")}; a self-registered client may use authorization_code and refresh_token`,
    );
  if (!grants.includes("authorization_code"))
    throw new InvalidClientMetadata("grant_types: must include authorization_code");
  // RFC 7591 §2 response_types: "If omitted, the default is that the client will use only the "code" response type."
  const responses = responseTypes ? [...new Set(responseTypes)] : ["code"];
  if (responses.length !== 1 || responses[0] !== "code")
    throw new InvalidClientMetadata('response_types: only "code" is supported');
  return SELF_REGISTERED_GRANTS.filter((g) => grants.includes(g)) as GrantType[];
}

function checkScopes(scope: string): string[] {
  const requested = scope.split(" ").filter(Boolean);
  const unknown = requested.filter((s) => !isScope(s));
  if (unknown.length)
    throw new InvalidClientMetadata(`scope: unknown ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`);
  return scopesOrAll(requested);
}

/**
 * OpenID Connect Dynamic Client Registration 1.0 §2 application_type:
 * "Native Clients MUST only register redirect_uris using custom URI schemes
 * or loopback URLs using the http scheme". Left out, the client is native
 * when every redirect URI is one only a native app can receive (agents
 * redirect to http://localhost:<port>/callback and send none), else web.
 */
function checkApplicationType(value: string | undefined, redirectUris: string[]): "web" | "native" {
  if (value !== undefined && value !== "web" && value !== "native")
    throw new InvalidClientMetadata('application_type: must be "web" or "native"');
  const native = redirectUris.filter(isNativeRedirect);
  const type = value ?? (native.length === redirectUris.length ? "native" : "web");
  if (type === "web" && native.length) {
    throw new InvalidRedirectUri(
      `${native[0]}: loopback and private-use scheme redirect URIs are for native applications (application_type "native")`,
    );
  }
  const web = redirectUris.find((u) => !isNativeRedirect(u));
  if (type === "native" && web) {
    throw new InvalidRedirectUri(
      `${web}: a native application redirects to a loopback URL or a private-use scheme (com.example.app:/callback)`,
    );
  }
  return type;
}

/** checkRedirectUri()'s ConnectError ("redirect_uri: why") as invalid_redirect_uri. */
function redirectUri(value: string, options: { allowInsecure: boolean; public: boolean }): string {
  try {
    return checkRedirectUri(value, options);
  } catch (err) {
    if (err instanceof ConnectError)
      throw new InvalidRedirectUri(`${value.slice(0, 200)}: ${err.rawMessage.replace(/^redirect_uri: /, "")}`);
    throw err;
  }
}

/** The request's metadata as it is stored, or the first problem (InvalidClientMetadata, InvalidRedirectUri). */
export function checkClientMetadata(req: RegisterClientRequest, options: { allowInsecureRedirects: boolean }) {
  const present = new Set(req.presentFields);
  const given = <T>(field: string, value: T) => (present.has(field) ? value : undefined);
  // RFC 7591 §2: "If unspecified or omitted, the default is "client_secret_basic""
  const method = given("token_endpoint_auth_method", req.tokenEndpointAuthMethod) ?? "client_secret_basic";
  if (!(AUTH_METHODS as readonly string[]).includes(method)) {
    throw new InvalidClientMetadata(
      `token_endpoint_auth_method: unsupported ${JSON.stringify(method.slice(0, 60))}; use none, client_secret_basic or client_secret_post`,
    );
  }
  const isPublic = method === "none";
  if (req.redirectUris.length === 0)
    throw new InvalidRedirectUri("redirect_uris: at least one is required (the authorization code grant redirects)");
  if (req.redirectUris.length > MAX_REDIRECT_URIS)
    throw new InvalidRedirectUri(`redirect_uris: at most ${MAX_REDIRECT_URIS}`);
  const redirectOptions = { allowInsecure: options.allowInsecureRedirects, public: isPublic };
  const redirectUris = [...new Set(req.redirectUris.map((u) => redirectUri(u, redirectOptions)))];
  const grantTypes = checkGrants(given("grant_types", req.grantTypes), given("response_types", req.responseTypes));
  const applicationType = checkApplicationType(given("application_type", req.applicationType), redirectUris);
  return {
    name: checkName(given("client_name", req.clientName), redirectUris),
    redirectUris,
    scopes: checkScopes(req.scope),
    public: isPublic,
    grantTypes,
    tokenEndpointAuthMethod: method as TokenEndpointAuthMethod,
    applicationType,
    clientUri: checkClientUri(given("client_uri", req.clientUri), options.allowInsecureRedirects),
  };
}
