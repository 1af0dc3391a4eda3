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
//
// Our own onRequest hook, not @fastify/cors: with a policy per path, that
// plugin takes a delegator, and then normalises the options, merges them
// with the route's and parses Vary on every request, Origin or not (the
// bench's /oauth/me lost a third of its rate to it, with trace context).
// Here each group's headers are strings made once at start.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { MCP_PATH } from "./mcp/route.js";
import { CONTACTS_PATH } from "./routes/contacts.js";
import { EVENT_TYPES_PATH } from "./routes/event-types.js";
import { SUBSCRIPTIONS_PATH } from "./routes/subscriptions.js";

/** Answer headers a script may read besides the CORS-safelisted ones. */
const READABLE = ["www-authenticate", "retry-after", "x-request-id"];

/** How long a browser may keep a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = 600;

interface GroupSpec {
  /** "*", or the origins whose pages may read the answers. */
  origins: "*" | readonly string[];
  methods: readonly string[];
  allowedHeaders: readonly string[];
  exposedHeaders: readonly string[];
}

/** MCP clients send MCP-Protocol-Version when they fetch the metadata (the SDK's client/auth.js). */
const DISCOVERY: GroupSpec = { origins: "*", methods: ["GET"], allowedHeaders: ["mcp-protocol-version", "x-request-id"], exposedHeaders: ["x-request-id"] };

const OAUTH: GroupSpec = {
  origins: "*",
  methods: ["POST"],
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: READABLE,
};

const API: GroupSpec = {
  origins: "*",
  methods: ["GET", "POST", "PUT", "DELETE"],
  allowedHeaders: ["authorization", "content-type", "x-request-id"],
  exposedHeaders: [...READABLE, "link", "location", "etag", "subscription-state", "subscription-state-reason"],
};

/**
 * /mcp: GET and DELETE are announced too, so that a browser agent trying
 * them reads the 405 (Allow: POST) instead of failing on the preflight.
 * A browser agent must read the 401's WWW-Authenticate to find the
 * protected resource metadata (RFC 9728 §5.1).
 */
const mcp = (origins: readonly string[]): GroupSpec => ({
  origins,
  methods: ["GET", "POST", "DELETE"],
  allowedHeaders: ["authorization", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id", "x-request-id"],
  exposedHeaders: [...READABLE, "mcp-session-id"],
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

/** A group's answer headers, made once. */
export interface CorsGroup {
  /**
   * Its CORS headers on every answer, Origin or not: the discovery documents,
   * which caches keep and hand to any page. The other groups' answers (no
   * store, or behind a bearer token) carry them only for a request with Origin.
   */
  always: boolean;
  /** undefined: any origin ("*"); else the allowed origins, answered by name with Vary: Origin. */
  origins?: ReadonlySet<string>;
  /** Access-Control-Expose-Headers. */
  expose: string;
  /** The preflight's Access-Control-Allow-Methods, -Allow-Headers and -Max-Age. */
  preflight: Record<string, string>;
}

function group(spec: GroupSpec, always = false): CorsGroup {
  return {
    always,
    origins: spec.origins === "*" ? undefined : new Set(spec.origins),
    expose: spec.exposedHeaders.join(", "),
    preflight: {
      "access-control-allow-methods": spec.methods.join(", "),
      "access-control-allow-headers": spec.allowedHeaders.join(", "),
      "access-control-max-age": String(PREFLIGHT_MAX_AGE),
    },
  };
}

/** The CORS group of each path, made once: `groupOf(path)` is undefined for a route no web page may read. */
export function corsGroups(mcpAllowed: readonly string[]): (path: string) => CorsGroup | undefined {
  const exact = new Map<string, CorsGroup>();
  const discovery = group(DISCOVERY, true);
  const oauth = group(OAUTH);
  const api = group(API);
  for (const path of DISCOVERY_PATHS) exact.set(path, discovery);
  for (const path of OAUTH_PATHS) exact.set(path, oauth);
  for (const path of API_PATHS) exact.set(path, api);
  exact.set(MCP_PATH, group(mcp(mcpAllowed)));
  return (path) => exact.get(path) ?? (API_PREFIXES.some((prefix) => path.startsWith(prefix)) ? api : undefined);
}

/**
 * The origins whose pages may call /mcp: the gateway's own (PUBLIC_URL's)
 * and the configured ones. The one list of the CORS answers and of the
 * endpoint's Origin check.
 */
export function mcpOrigins(issuer: string, configured: readonly string[] = []): string[] {
  return [...new Set([new URL(issuer).origin, ...configured])];
}

/** Fetch, "CORS protocol and HTTP caches": an answer that depends on Origin says so. */
function varyOrigin(reply: FastifyReply): void {
  const vary = reply.getHeader("vary");
  if (vary === undefined) reply.header("vary", "Origin");
  else if (!String(vary).toLowerCase().split(",").some((v) => v.trim() === "origin" || v.trim() === "*")) reply.header("vary", `${vary}, Origin`);
}

/**
 * The allowed origin to name in Access-Control-Allow-Origin: "*" for a
 * group of any origin (the answer is the same for every page, so no Vary),
 * the request's Origin if the group lists it, else undefined.
 */
function allowedOrigin(group: CorsGroup, request: FastifyRequest, reply: FastifyReply): string | undefined {
  if (!group.origins) return "*";
  varyOrigin(reply);
  const origin = request.headers.origin;
  return origin !== undefined && group.origins.has(origin) ? origin : undefined;
}

/**
 * The CORS headers of each request's path. Registered before the request
 * guards, so that their refusals (415, 417…) are readable too. A preflight
 * (OPTIONS with Origin and Access-Control-Request-Method) to a route of a
 * group is answered 204 here; any other OPTIONS request, or one to a route
 * of no group, gets no CORS header and goes on to the not-found handler
 * (405 with Allow, or 404).
 */
export function registerCors(app: FastifyInstance, mcpAllowed: readonly string[]): void {
  const groupOf = corsGroups(mcpAllowed);
  app.addHook("onRequest", (request, reply, done) => {
    const url = request.url;
    const query = url.indexOf("?");
    const cors = groupOf(query === -1 ? url : url.slice(0, query));
    if (!cors) return done();
    if (request.method !== "OPTIONS") {
      // Fetch: a browser's CORS request always carries Origin. Without one (a
      // server, a CLI, an integration platform), no page reads the answer: a
      // group whose answers depend on the request (every one but discovery)
      // sends no CORS header, only Vary: Origin, so that a browser's cache
      // never hands this answer to a page of another origin.
      if (request.headers.origin === undefined && !cors.always) {
        varyOrigin(reply);
        return done();
      }
      const origin = allowedOrigin(cors, request, reply);
      if (origin !== undefined) reply.headers({ "access-control-allow-origin": origin, "access-control-expose-headers": cors.expose });
      return done();
    }
    if (request.headers.origin === undefined || request.headers["access-control-request-method"] === undefined) return done();
    const origin = allowedOrigin(cors, request, reply);
    // Fetch, "CORS-preflight fetch": a preflight whose answer lacks an allowed
    // origin fails in the browser; the 204 tells it nothing more.
    if (origin !== undefined) reply.headers({ "access-control-allow-origin": origin, ...cors.preflight });
    // Safari waits for a body on a 204 without Content-Length.
    reply.code(204).header("content-length", "0").send();
  });
}
