// A fetched metadata document read as client metadata (RFC 7591 §2) of a
// public client (PKCE required), under draft-ietf-oauth-client-id-metadata-
// document's rules. The JSON is read as strictly as a request body to the
// gateway (services/shared/strict-json.ts): no member twice, no U+0000 or
// unpaired surrogate anywhere.
import { ConnectError } from "@connectrpc/connect";
import { unstorableReason } from "../../../shared/storable-text.js";
import { strictJsonProblem, type StrictJsonProblem } from "../../../shared/strict-json.js";
import { isPrintableName } from "../client-metadata.js";
import { checkGrantTypes } from "../grant-types.js";
import { checkRedirectUri } from "../redirect-uri.js";
import { ALL_SCOPES } from "../../scopes.js";
import { DocumentRefusal } from "./document-refusal.js";

/** What the client row keeps of a document. */
export interface DocumentMetadata {
  name: string;
  redirectUris: string[];
  scopes: string[];
  grantTypes: string[];
  clientUri: string | null;
  applicationType: "web" | "native";
}

const MAX_REDIRECT_URIS = 10;

export function parseDocument(url: string, body: string, options: { allowInsecure: boolean }): DocumentMetadata {
  const refuse = (what: string) => new DocumentRefusal(url, what);
  const unusable: Unusable = (what) => refuse(`cannot be used: ${what}`);
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    throw refuse("is not valid JSON");
  }
  const problem = strictJsonProblem(body, doc);
  if (problem) throw unusable(strictJsonRefusal(problem));
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw refuse("is not a JSON object");
  const d = doc as Record<string, unknown>;
  // "The client metadata document MUST contain a client_id property whose value MUST match the URL of the document"
  if (d.client_id !== url) {
    const said = typeof d.client_id === "string" ? JSON.stringify(d.client_id.slice(0, 200)) : "missing";
    throw unusable(`its client_id differs from its URL (client_id: ${said})`);
  }
  // "the client_secret and client_secret_expires_at properties MUST NOT be used"; "the token_endpoint_auth_method
  // property MUST NOT include client_secret_post or client_secret_basic"
  if ("client_secret" in d || "client_secret_expires_at" in d) throw unusable("it must not carry a client_secret");
  const method = d.token_endpoint_auth_method ?? "none";
  if (method !== "none") {
    throw unusable(
      `its token_endpoint_auth_method is ${JSON.stringify(method)}; only none is accepted (a public client, with PKCE)`,
    );
  }
  const redirectUris = readRedirectUris(d.redirect_uris, options.allowInsecure, unusable);
  const responseTypes = d.response_types;
  if (responseTypes !== undefined && !(Array.isArray(responseTypes) && responseTypes.includes("code")))
    throw unusable('its response_types must include "code"');
  return {
    name: readName(d.client_name, url, unusable),
    redirectUris,
    scopes: readScopes(d.scope, unusable),
    grantTypes: readGrantTypes(d.grant_types, redirectUris, unusable),
    clientUri: readClientUri(d.client_uri, unusable),
    applicationType: readApplicationType(d.application_type, unusable),
  };
}

/** A refusal "cannot be used: <what>". */
type Unusable = (what: string) => DocumentRefusal;

function strictJsonRefusal(problem: StrictJsonProblem): string {
  if (problem.kind === "repeated-name")
    return `it has the member ${JSON.stringify(problem.name.slice(0, 100))} more than once`;
  const why = unstorableReason(problem.text);
  if (problem.member === undefined) return `it must not contain ${why}`;
  if (problem.isMemberName) return `a member name must not contain ${why}`;
  return `its member ${JSON.stringify(problem.member.slice(0, 100))} must not contain ${why}`;
}

const stringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((v) => typeof v === "string");

/** What checkRedirectUri() and checkGrantTypes() said, without their field prefix. */
const reason = (err: unknown) => (err instanceof ConnectError ? err.rawMessage : String(err)).replace(/^[a-z_]+: /, "");

/** As a registration's, of a public client (clients/redirect-uri.ts). */
function readRedirectUris(value: unknown, allowInsecure: boolean, unusable: Unusable): string[] {
  if (!stringList(value) || value.length === 0) throw unusable("its redirect_uris must be a non-empty list of strings");
  if (value.length > MAX_REDIRECT_URIS) throw unusable(`it lists more than ${MAX_REDIRECT_URIS} redirect_uris`);
  const checked = value.map((uri) => {
    try {
      return checkRedirectUri(uri, { allowInsecure, public: true });
    } catch (err) {
      throw unusable(`its redirect_uri ${JSON.stringify(uri.slice(0, 200))} is not acceptable: ${reason(err)}`);
    }
  });
  return [...new Set(checked)];
}

function readName(value: unknown, url: string, unusable: Unusable): string {
  if (value === undefined) return new URL(url).host;
  const name = typeof value === "string" ? value.trim() : "";
  if (!name || !isPrintableName(name)) throw unusable("its client_name must be 1 to 100 printable characters");
  return name;
}

/**
 * RFC 7591 §2 scope: "Space-separated list of scope values". Those this
 * server does not know are left out; absent: every scope.
 */
function readScopes(value: unknown, unusable: Unusable): string[] {
  if (value === undefined) return [...ALL_SCOPES];
  if (typeof value !== "string") throw unusable("its scope must be a string");
  const named = value.split(" ").filter(Boolean);
  const scopes = ALL_SCOPES.filter((s) => named.includes(s));
  if (scopes.length) return scopes;
  throw unusable(`its scope names none of this server's scopes (${ALL_SCOPES.join(" ")})`);
}

/**
 * RFC 7591 §2 grant_types, as a public client's (no client_credentials); absent: authorization_code and refresh_token.
 */
function readGrantTypes(value: unknown, redirectUris: string[], unusable: Unusable): string[] {
  if (value !== undefined && !stringList(value)) throw unusable("its grant_types must be a list of strings");
  try {
    return checkGrantTypes(value ?? [], { public: true, ownerOrganisationId: null, redirectUris });
  } catch (err) {
    throw unusable(`its grant_types are not acceptable: ${reason(err)}`);
  }
}

function readClientUri(value: unknown, unusable: Unusable): string | null {
  if (value === undefined) return null;
  const ok =
    typeof value === "string" && value.length <= 2048 && /^https?:\/\/[^\s]+$/i.test(value) && URL.canParse(value);
  if (!ok) throw unusable("its client_uri must be an http or https URL");
  return value;
}

function readApplicationType(value: unknown, unusable: Unusable): "web" | "native" {
  if (value === undefined) return "web";
  if (value === "web" || value === "native") return value;
  throw unusable('its application_type must be "web" or "native"');
}
