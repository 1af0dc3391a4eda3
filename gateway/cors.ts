// CORS (the Fetch standard's CORS protocol) with @fastify/cors: which web
// pages may read which answers, per group of routes. A route in no group
// sends no CORS header, and a preflight to it is refused as any OPTIONS
// request is (405 with Allow, or 404): the pages, GET /oauth/authorize (a
// browser navigates there, it does not fetch it) and /oauth/introspect (for
// resource servers, never a browser).
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
//
// Each group is the plugin's route-level options (config.cors), set on its
// routes as they are added; the plugin's own options (origin: false) leave
// every other route alone. A preflight is routed by its method: each group
// path has an OPTIONS route of its own carrying the group's options (the
// plugin's OPTIONS * route carries the plugin's, so it refuses the others).
// Not the plugin's delegator (options per request): with one, the plugin
// adds Vary: Origin to every answer, the discovery documents' too.
import cors, { type FastifyCorsOptions, type OriginFunction } from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import { MCP_PATH } from "./mcp/route.js";
import { CONTACTS_PATH } from "./routes/contacts.js";
import { EVENT_TYPES_PATH } from "./routes/event-types.js";
import { SUBSCRIPTIONS_PATH } from "./routes/subscriptions.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's own options of @fastify/cors (its route-level overrides; its typings leave them out). */
    cors?: FastifyCorsOptions | false;
  }
}

/** Answer headers a script may read besides the CORS-safelisted ones. */
const READABLE = ["www-authenticate", "retry-after", "x-request-id"];

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

/**
 * Fetch: a browser's CORS request always carries Origin. Without one (a
 * server, a CLI, an integration platform) no page reads the answer: it gets
 * no CORS header, only Vary: Origin (the plugin's, for an origin function),
 * so that a browser's cache never hands it to a page of another origin; and
 * an OPTIONS request without Origin is no preflight. A page's request gets
 * `allowed`: "*", or the origins named (the request's own when listed).
 */
const fromPages =
  (allowed: string | string[]): OriginFunction =>
  (origin, done) =>
    done(null, origin === undefined ? false : allowed);

/** MCP clients send MCP-Protocol-Version when they fetch the metadata (the SDK's client/auth.js). */
const DISCOVERY: FastifyCorsOptions = {
  // Every answer, Origin or not, without Vary: caches keep these documents and hand them to any page.
  origin: "*",
  methods: ["GET"],
  allowedHeaders: ["mcp-protocol-version", "x-request-id"],
  exposedHeaders: ["x-request-id"],
  maxAge: PREFLIGHT_MAX_AGE,
};

const OAUTH: FastifyCorsOptions = {
  origin: fromPages("*"),
  methods: ["POST"],
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: READABLE,
  maxAge: PREFLIGHT_MAX_AGE,
};

const API: FastifyCorsOptions = {
  origin: fromPages("*"),
  methods: ["GET", "POST", "PUT", "DELETE"],
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: [...READABLE, "link", "location", "etag", "subscription-state", "subscription-state-reason"],
  maxAge: PREFLIGHT_MAX_AGE,
};

/**
 * /mcp: GET and DELETE are announced too, so that a browser agent trying
 * them reads the 405 (Allow: POST) instead of failing on the preflight.
 * A browser agent must read the 401's WWW-Authenticate to find the
 * protected resource metadata (RFC 9728 §5.1).
 */
const mcp = (origins: readonly string[]): FastifyCorsOptions => ({
  origin: fromPages([...origins]),
  methods: ["GET", "POST", "DELETE"],
  allowedHeaders: [
    "authorization",
    "content-type",
    "mcp-protocol-version",
    "mcp-session-id",
    "last-event-id",
    "x-request-id",
  ],
  exposedHeaders: [...READABLE, "mcp-session-id"],
  maxAge: PREFLIGHT_MAX_AGE,
});

const DISCOVERY_PATHS = [
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/mcp",
  "/openapi.json",
  "/openapi.yaml",
  EVENT_TYPES_PATH,
];
const OAUTH_PATHS = ["/oauth/token", "/oauth/revoke", "/oauth/register"];
const API_PATHS = ["/oauth/me", CONTACTS_PATH, SUBSCRIPTIONS_PATH];
const API_PREFIXES = [`${CONTACTS_PATH}/`, `${SUBSCRIPTIONS_PATH}/`];

/** The CORS options of each route path (a template: /oauth/contacts/:id): undefined for a route no web page may read. */
function corsGroups(mcpAllowed: readonly string[]): (path: string) => FastifyCorsOptions | undefined {
  const exact = new Map<string, FastifyCorsOptions>();
  for (const path of DISCOVERY_PATHS) exact.set(path, DISCOVERY);
  for (const path of OAUTH_PATHS) exact.set(path, OAUTH);
  for (const path of API_PATHS) exact.set(path, API);
  exact.set(MCP_PATH, mcp(mcpAllowed));
  return (path) => exact.get(path) ?? (API_PREFIXES.some((prefix) => path.startsWith(prefix)) ? API : undefined);
}

/** A group's options for its preflights: an OPTIONS request without Origin is no preflight (fromPages), whatever the group. */
const preflightOptions = (group: FastifyCorsOptions): FastifyCorsOptions =>
  typeof group.origin === "string" ? { ...group, origin: fromPages(group.origin) } : group;

/**
 * The origins whose pages may call /mcp: the gateway's own (PUBLIC_URL's)
 * and the configured ones. The one list of the CORS answers and of the
 * endpoint's Origin check.
 */
export function mcpOrigins(issuer: string, configured: readonly string[] = []): string[] {
  return [...new Set([new URL(issuer).origin, ...configured])];
}

/**
 * The plugin, and each group's options on its routes as they are added.
 * Before the request guards (its hook runs first), so that their refusals
 * (415, 417…) are readable too; before the routes, whose options it sets.
 */
export async function registerCors(app: FastifyInstance, mcpAllowed: readonly string[]): Promise<void> {
  const groupOf = corsGroups(mcpAllowed);
  // strictPreflight off: an OPTIONS request with Origin is answered as a preflight, never with the plugin's text/plain 400.
  await app.register(cors, { origin: false, strictPreflight: false });
  app.addHook("onRoute", (route) => {
    const group = groupOf(route.url);
    if (group) route.config = { ...route.config, cors: route.method === "OPTIONS" ? preflightOptions(group) : group };
  });
  // Each group path's preflight route; an OPTIONS request that is no preflight
  // goes on, as from the plugin's OPTIONS * route, to the not-found handler.
  // Added before the gateway's route table (app.ts), so no Allow names OPTIONS;
  // hidden, so the OpenAPI document has no OPTIONS operation.
  const preflight = { schema: { hide: true } };
  const paths = [
    ...DISCOVERY_PATHS,
    ...OAUTH_PATHS,
    ...API_PATHS,
    MCP_PATH,
    ...API_PREFIXES.map((prefix) => `${prefix}*`),
  ];
  for (const path of paths) app.options(path, preflight, (_request, reply) => reply.callNotFound());
}
