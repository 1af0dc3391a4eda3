// A fetched metadata document read as client metadata (RFC 7591 §2), with
// the rules of draft-ietf-oauth-client-id-metadata-document: "The client
// metadata document MUST contain a client_id property whose value MUST match
// the URL of the document using simple string comparison", and, "as there is
// no way to establish a shared secret", "the token_endpoint_auth_method
// property MUST NOT include client_secret_post or client_secret_basic" and
// "the client_secret and client_secret_expires_at properties MUST NOT be
// used". Only "none" is accepted: the client is public, PKCE required. The
// JSON itself is read as strictly as a request body to the gateway.
import { ConnectError } from "@connectrpc/connect";
import { unstorableReason } from "../../../shared/storable-text.js";
import { strictJsonProblem, type StrictJsonProblem } from "../../../shared/strict-json.js";
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
const MAX_NAME_CHARACTERS = 100;

export function parseDocument(url: string, body: string, options: { allowInsecure: boolean }): DocumentMetadata {
  const refuse = (what: string) => new DocumentRefusal(url, what);
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    throw refuse("is not valid JSON");
  }
  const problem = strictJsonProblem(body, doc);
  if (problem) throw refuse(`cannot be used: ${strictJsonRefusal(problem)}`);
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw refuse("is not a JSON object");
  const d = doc as Record<string, unknown>;
  if (d.client_id !== url) {
    const said = typeof d.client_id === "string" ? JSON.stringify(d.client_id.slice(0, 200)) : "missing";
    throw refuse(`cannot be used: its client_id differs from its URL (client_id: ${said})`);
  }
  if ("client_secret" in d || "client_secret_expires_at" in d)
    throw refuse("cannot be used: it must not carry a client_secret");
  const method = d.token_endpoint_auth_method ?? "none";
  if (method !== "none") {
    throw refuse(
      `cannot be used: its token_endpoint_auth_method is ${JSON.stringify(method)}; only none is accepted (a public client, with PKCE)`,
    );
  }
  const redirectUris = readRedirectUris(d.redirect_uris, options.allowInsecure, refuse);
  const responseTypes = d.response_types;
  if (responseTypes !== undefined && !(Array.isArray(responseTypes) && responseTypes.includes("code"))) {
    throw refuse('cannot be used: its response_types must include "code"');
  }
  return {
    name: readName(d.client_name, url, refuse),
    redirectUris,
    scopes: readScopes(d.scope, refuse),
    grantTypes: readGrantTypes(d.grant_types, redirectUris, refuse),
    clientUri: readClientUri(d.client_uri, refuse),
    applicationType: readApplicationType(d.application_type, refuse),
  };
}

type Refuse = (what: string) => DocumentRefusal;

/**
 * The JSON a request body to the gateway must be (services/shared/strict-json.ts):
 * no member twice (JSON.parse would keep the last one), no U+0000 or unpaired
 * surrogate in any name or string, whether this server reads that member or not.
 */
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

function readRedirectUris(value: unknown, allowInsecure: boolean, refuse: Refuse): string[] {
  if (!stringList(value) || value.length === 0)
    throw refuse("cannot be used: its redirect_uris must be a non-empty list of strings");
  if (value.length > MAX_REDIRECT_URIS)
    throw refuse(`cannot be used: it lists more than ${MAX_REDIRECT_URIS} redirect_uris`);
  return [
    ...new Set(
      value.map((uri) => {
        try {
          // As a registration's, of a public client (clients/redirect-uri.ts).
          return checkRedirectUri(uri, { allowInsecure, public: true });
        } catch (err) {
          throw refuse(
            `cannot be used: its redirect_uri ${JSON.stringify(uri.slice(0, 200))} is not acceptable: ${reason(err)}`,
          );
        }
      }),
    ),
  ];
}

function readName(value: unknown, url: string, refuse: Refuse): string {
  if (value === undefined) return new URL(url).host;
  const name = typeof value === "string" ? value.trim() : "";
  if (!name || [...name].length > MAX_NAME_CHARACTERS || /[\u0000-\u001f\u007f]/.test(name)) {
    throw refuse(`cannot be used: its client_name must be 1 to ${MAX_NAME_CHARACTERS} printable characters`);
  }
  return name;
}

/**
 * RFC 7591 §2 scope: "Space-separated list of scope values [...] that the
 * client can use when requesting access tokens." Those this server does not
 * know are left out; absent: every scope.
 */
function readScopes(value: unknown, refuse: Refuse): string[] {
  if (value === undefined) return [...ALL_SCOPES];
  if (typeof value !== "string") throw refuse("cannot be used: its scope must be a string");
  const named = value.split(" ").filter(Boolean);
  const scopes = ALL_SCOPES.filter((s) => named.includes(s));
  if (scopes.length) return scopes;
  throw refuse(`cannot be used: its scope names none of this server's scopes (${ALL_SCOPES.join(" ")})`);
}

/** RFC 7591 §2 grant_types, as a public client's (no client_credentials); absent: authorization_code and refresh_token. */
function readGrantTypes(value: unknown, redirectUris: string[], refuse: Refuse): string[] {
  if (value !== undefined && !stringList(value))
    throw refuse("cannot be used: its grant_types must be a list of strings");
  try {
    return checkGrantTypes(value ?? [], { public: true, ownerOrganisationId: null, redirectUris });
  } catch (err) {
    throw refuse(`cannot be used: its grant_types are not acceptable: ${reason(err)}`);
  }
}

function readClientUri(value: unknown, refuse: Refuse): string | null {
  if (value === undefined) return null;
  const ok =
    typeof value === "string" && value.length <= 2048 && /^https?:\/\/[^\s]+$/i.test(value) && URL.canParse(value);
  if (!ok) throw refuse("cannot be used: its client_uri must be an http or https URL");
  return value;
}

function readApplicationType(value: unknown, refuse: Refuse): "web" | "native" {
  if (value === undefined) return "web";
  if (value === "web" || value === "native") return value;
  throw refuse('cannot be used: its application_type must be "web" or "native"');
}
