// POST /oauth/register (RFC 7591): the client metadata and the client
// information. Only the members' types are validated (invalid_client_metadata).
import { z } from "zod";
import { ALL_SCOPES } from "../../services/auth/scopes.js";
import { DEFAULT_ERROR, HEADERS, error, json } from "./common.js";
import { OAUTH_NO_STORE, oauthUnavailable } from "./oauth.js";

const TAGS = ["OAuth 2.0"];

/** A member that is a string when present; null counts as left out. */
const text = (name: string) => z.string({ error: `${name}: expected a string` }).nullish();
const strings = (name: string) =>
  z
    .array(z.string({ error: `${name}: expected an array of strings` }), {
      error: `${name}: expected an array of strings`,
    })
    .nullish();

export const METADATA_MEMBERS = [
  "redirect_uris",
  "token_endpoint_auth_method",
  "grant_types",
  "response_types",
  "client_name",
  "client_uri",
  "scope",
  "application_type",
] as const;

export const ClientMetadata = z
  .looseObject(
    {
      redirect_uris: strings("redirect_uris").describe(
        "Required: where codes may be sent, each matched exactly (a loopback one with any port for a public client). https; a native application's are loopback http URLs or a private-use scheme (com.example.app:/callback)",
      ),
      token_endpoint_auth_method: text("token_endpoint_auth_method").describe(
        "none (a public client: no secret, PKCE), client_secret_basic (the default) or client_secret_post",
      ),
      grant_types: strings("grant_types").describe(
        "authorization_code (the default), and refresh_token to get refresh tokens",
      ),
      response_types: strings("response_types").describe('Only ["code"] (the default)'),
      client_name: text("client_name").describe(
        "Shown on the consent page; the first redirect URI's host when left out",
      ),
      client_uri: text("client_uri").describe("The application's home page (https)"),
      scope: text("scope").describe(
        `Space-separated scopes the client may ask for: ${ALL_SCOPES.join(", ")}; all of them when left out`,
      ),
      application_type: text("application_type").describe(
        "web or native. Left out: native when every redirect URI is a loopback URL or a private-use scheme, else web",
      ),
    },
    { error: "the body must be a JSON object of client metadata" },
  )
  .describe("RFC 7591 §2 client metadata; members this server does not use (logo_uri, contacts, …) are ignored")
  .meta({
    examples: [
      {
        client_name: "Example Agent",
        redirect_uris: ["http://localhost:33418/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
    ],
  });

export const ClientInformation = z
  .object({
    client_id: z.string(),
    client_secret: z.string().optional().describe("Confidential clients only; shown in this answer only"),
    client_id_issued_at: z.number().int().describe("When the client_id was issued, in seconds since 1970"),
    client_secret_expires_at: z
      .literal(0)
      .optional()
      .describe("0: the secret does not expire (present with client_secret)"),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.enum(["none", "client_secret_basic", "client_secret_post"]),
    grant_types: z.array(z.enum(["authorization_code", "refresh_token"])),
    response_types: z.array(z.literal("code")),
    client_name: z.string(),
    client_uri: z.string().optional(),
    scope: z.string().describe("Space-separated"),
    application_type: z.enum(["web", "native"]),
  })
  .meta({
    id: "ClientInformation",
    description: "RFC 7591 §3.2.1: the client's identifier (and secret) with its metadata as registered",
  });

const example = {
  client_id: "bc_q3ZyXk1pN0d4bWFn",
  client_id_issued_at: 1768469400,
  redirect_uris: ["http://localhost:33418/callback"],
  token_endpoint_auth_method: "none",
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  client_name: "Example Agent",
  scope: ALL_SCOPES.join(" "),
  application_type: "native",
};

const badMetadata = error(
  "RFC 7591 §3.2.2: invalid_redirect_uri (a redirect URI is not valid, or not one this application type may use) or invalid_client_metadata (any other member)",
  "invalid_redirect_uri",
  'http://localhost:33418/callback: loopback and private-use scheme redirect URIs are for native applications (application_type "native")',
  OAUTH_NO_STORE,
);

export const REGISTER_ROUTE = {
  operationId: "registerClient",
  summary: "Register a client application (dynamic client registration; optional, off by default)",
  description:
    "RFC 7591. Answers only when the server turns dynamic registration on (OAUTH_DYNAMIC_REGISTRATION; the authorization server metadata then names this registration_endpoint); otherwise 404. Open to anyone, and limited per address. A self-registered client acts only for the organisations whose members consent, and the consent page says that it registered itself.",
  tags: TAGS,
  security: [],
  consumes: ["application/json"],
  body: ClientMetadata,
  response: {
    201: json(
      "Registered (RFC 7591 §3.2.1); the client_secret is in this answer only",
      ClientInformation,
      example,
      OAUTH_NO_STORE,
    ),
    400: badMetadata,
    404: error(
      "Dynamic client registration is turned off",
      "not_found",
      "dynamic client registration is not enabled on this server",
    ),
    415: error(
      "The body is not application/json",
      "unsupported_media_type",
      "send the client metadata as application/json",
      OAUTH_NO_STORE,
    ),
    429: error(
      "Too many registrations from this address; wait as Retry-After says",
      "rate_limited",
      "too many client registrations from this address; try again later",
      { ...OAUTH_NO_STORE, "retry-after": HEADERS.retryAfter },
    ),
    503: oauthUnavailable,
    default: DEFAULT_ERROR,
  },
};
