// CORS (the Fetch standard's CORS protocol): which web pages may read which
// answers, per group of routes. A route in no group sends no CORS header, and
// a preflight to it is refused as before (405 with Allow, or 404): the pages,
// GET /oauth/authorize (a browser navigates there, it does not fetch it) and
// /oauth/introspect (for resource servers, never a browser).
//
//   discovery   the metadata documents, the OpenAPI document and the event
//               catalog: any origin, GET
//   oauth       /oauth/token, /oauth/revoke, /oauth/register, which public
//               clients (single-page apps, browser agents) call: any origin,
//               POST, no cookies
//   mcp         /mcp: PUBLIC_URL's origin and MCP_ALLOWED_ORIGINS, the same
//               list as the endpoint's Origin check (mcp/route.ts)
//   api         the REST routes taking bearer tokens: any origin, no cookies.
//               A bearer token is no ambient credential (a browser never adds
//               it on its own), so reading these answers from another origin
//               needs the token already: CORS adds no cross-site request risk.
//
// Fetch, "CORS protocol and credentials": "Access-Control-Allow-Origin: *"
// is only honoured for requests without credentials (cookies), which is
// what every group but mcp answers; mcp names its origins.
import cors, { type FastifyCorsOptions } from "@fastify/cors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { MCP_PATH } from "./mcp/route.js";
import { CONTACTS_PATH } from "./routes/contacts.js";
import { EVENT_TYPES_PATH } from "./routes/event-types.js";
import { SUBSCRIPTIONS_PATH } from "./routes/subscriptions.js";

/** Answer headers a script may read besides the CORS-safelisted ones. */
const READABLE = ["www-authenticate", "retry-after", "x-request-id"];

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/** MCP clients send MCP-Protocol-Version when they fetch the metadata (the SDK's client/auth.js). */
const DISCOVERY: FastifyCorsOptions = { origin: "*", methods: ["GET"], allowedHeaders: ["mcp-protocol-version", "x-request-id"], exposedHeaders: ["x-request-id"] };

const OAUTH: FastifyCorsOptions = {
  origin: "*",
  methods: ["POST"],
  credentials: false,
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: READABLE,
};

const API: FastifyCorsOptions = {
  origin: "*",
  methods: ["GET", "POST", "PUT", "DELETE"],
  credentials: false,
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: [...READABLE, "link", "location", "etag", "subscription-state", "subscription-state-reason"],
};

/**
 * /mcp: GET and DELETE are announced too, so that a browser agent trying
 * them reads the 405 (Allow: POST) instead of failing on the preflight.
 * A browser agent must read the 401's WWW-Authenticate to find the
 * protected resource metadata (RFC 9728 §5.1).
 */
const mcp = (origins: string[]): FastifyCorsOptions => ({
  origin: origins,
  methods: ["GET", "POST", "DELETE"],
  credentials: false,
  allowedHeaders: ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id", "x-request-id"],
  exposedHeaders: [...READABLE, "mcp-session-id"],
});

const DISCOVERY_PATHS = new Set([
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
  "/openapi.json",
  "/openapi.yaml",
  EVENT_TYPES_PATH,
]);
const OAUTH_PATHS = new Set(["/oauth/token", "/oauth/revoke", "/oauth/register"]);
const API_PATHS = new Set(["/oauth/me", CONTACTS_PATH, SUBSCRIPTIONS_PATH]);
const API_PREFIXES = [`${CONTACTS_PATH}/`, `${SUBSCRIPTIONS_PATH}/`];

/** The CORS policy of a path, or undefined for a route no web page may read. */
export function corsPolicy(path: string, mcpOrigins: string[]): FastifyCorsOptions | undefined {
  if (DISCOVERY_PATHS.has(path)) return DISCOVERY;
  if (OAUTH_PATHS.has(path)) return OAUTH;
  if (path === MCP_PATH) return mcp(mcpOrigins);
  if (API_PATHS.has(path) || API_PREFIXES.some((prefix) => path.startsWith(prefix))) return API;
  return undefined;
}

/**
 * The origins whose pages may call /mcp: the gateway's own (PUBLIC_URL's)
 * and the configured ones. The one list of the CORS answers and of the
 * endpoint's Origin check.
 */
export function mcpOrigins(issuer: string, configured: readonly string[] = []): string[] {
  return [...new Set([new URL(issuer).origin, ...configured])];
}

/** A preflight as the Fetch standard sends it: OPTIONS with Origin and Access-Control-Request-Method. */
const isPreflight = (request: FastifyRequest) =>
  request.method === "OPTIONS" && request.headers.origin !== undefined && request.headers["access-control-request-method"] !== undefined;

/**
 * @fastify/cors with the policy of each request's path. Registered before
 * the request guards, so that their refusals (415, 417…) are readable too.
 * A preflight is answered 204 in its onRequest hook; any other OPTIONS
 * request, or one to a route of no group, gets no CORS headers and goes on
 * to the not-found handler (405 with Allow, or 404), as before.
 */
export async function registerCors(app: FastifyInstance, mcpAllowed: string[]): Promise<void> {
  await app.register(cors, {
    hideOptionsRoute: true,
    delegator: (request, callback) => {
      const path = request.url.split("?")[0]!;
      const policy = request.method === "OPTIONS" && !isPreflight(request) ? undefined : corsPolicy(path, mcpAllowed);
      callback(null, policy ? { ...policy, maxAge: PREFLIGHT_MAX_AGE } : { origin: false });
    },
  });
}
