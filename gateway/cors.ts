// CORS with @fastify/cors, per group of routes (the plugin's route-level
// options, and an OPTIONS route per group path for its preflights): the
// discovery documents and the OAuth and bearer routes for any page, without
// cookies (a bearer token is no ambient credential); /mcp for PUBLIC_URL's
// origin and MCP_ALLOWED_ORIGINS. Routes in no group (the pages,
// /oauth/authorize, /oauth/introspect) send no CORS header. Not the plugin's
// delegator: it would add Vary: Origin to every answer.
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
const SENT = ["authorization", "content-type", "x-request-id"];

/**
 * Fetch: a browser's CORS request always carries Origin. Without one no page
 * reads the answer: no CORS header, only Vary: Origin (so a browser's cache
 * never hands it to another origin's page), and an OPTIONS is no preflight.
 */
const fromPages =
  (allowed: string | string[]): OriginFunction =>
  (origin, done) =>
    done(null, origin === undefined ? false : allowed);

/** A group: which pages may read, with which methods and request headers, reading which answer headers. */
const group = (
  origin: FastifyCorsOptions["origin"],
  methods: string[],
  allowedHeaders: string[],
  exposedHeaders: string[],
): FastifyCorsOptions => ({ origin, methods, allowedHeaders, exposedHeaders, maxAge: 600 });

// Every answer, Origin or not, without Vary: caches keep these documents and hand them to any page.
// MCP clients send MCP-Protocol-Version when they fetch the metadata (the SDK's client/auth.js).
const DISCOVERY = group("*", ["GET"], ["mcp-protocol-version", "x-request-id"], ["x-request-id"]);
const OAUTH = group(fromPages("*"), ["POST"], SENT, READABLE);
const API = group(fromPages("*"), ["GET", "POST", "PUT", "DELETE"], SENT, [
  ...READABLE,
  "link",
  "location",
  "etag",
  "subscription-state",
  "subscription-state-reason",
]);
// /mcp: GET and DELETE are announced too, so a browser agent reads their 405, not a failed preflight.
const mcp = (origins: readonly string[]) =>
  group(
    fromPages([...origins]),
    ["GET", "POST", "DELETE"],
    ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id", "x-request-id"],
    [...READABLE, "mcp-session-id"],
  );

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

/** A group's options for its preflights: an OPTIONS request without Origin is no preflight, whatever the group. */
const preflightOptions = (group: FastifyCorsOptions): FastifyCorsOptions =>
  typeof group.origin === "string" ? { ...group, origin: fromPages(group.origin) } : group;

/** The origins whose pages may call /mcp: PUBLIC_URL's and the configured ones (CORS and the Origin check). */
export function mcpOrigins(issuer: string, configured: readonly string[] = []): string[] {
  return [...new Set([new URL(issuer).origin, ...configured])];
}

/** Before the request guards, so their refusals are readable too, and before the routes, whose options it sets. */
export async function registerCors(app: FastifyInstance, mcpAllowed: readonly string[]): Promise<void> {
  const exact = new Map<string, FastifyCorsOptions>([
    ...DISCOVERY_PATHS.map((path) => [path, DISCOVERY] as const),
    ...OAUTH_PATHS.map((path) => [path, OAUTH] as const),
    ...API_PATHS.map((path) => [path, API] as const),
    [MCP_PATH, mcp(mcpAllowed)],
  ]);
  /** The CORS options of a route path (a template); undefined for a route no web page may read. */
  const groupOf = (path: string) => exact.get(path) ?? (API_PREFIXES.some((p) => path.startsWith(p)) ? API : undefined);
  // strictPreflight off: an OPTIONS with Origin is a preflight, never the plugin's text/plain 400.
  await app.register(cors, { origin: false, strictPreflight: false });
  app.addHook("onRoute", (route) => {
    const group = groupOf(route.url);
    if (group) route.config = { ...route.config, cors: route.method === "OPTIONS" ? preflightOptions(group) : group };
  });
  // An OPTIONS request that is no preflight goes on to the not-found handler. Added before
  // the route table, so no Allow names OPTIONS; hidden from the OpenAPI document.
  const paths = [...exact.keys(), ...API_PREFIXES.map((prefix) => `${prefix}*`)];
  for (const path of paths) app.options(path, { schema: { hide: true } }, (_request, reply) => reply.callNotFound());
}
