// Bearer token checks (RFC 6750): the access token in the Authorization header
// only, resolved through the bearer cache, issued for the resource asked for
// (RFC 8707 audience), with the route's scopes; the principal lands in
// request.bearer. Every challenge names the resource's metadata (RFC 9728
// §5.1), which is how an agent without a token finds the authorization server.
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from "fastify";
import { OAuthErrorSchema } from "../gen/bizcard/auth/v1/auth_pb.js";
import type { BearerCache, BearerPrincipal, PrincipalOrganisation } from "./bearer-cache.js";
import { rpcOptions, type ServiceClients } from "./clients.js";
import { HttpError } from "./errors.js";
import type { ProtectedResources, ResourceName } from "../services/shared/protected-resources.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by requireScope: the access token's principal. */
    bearer?: BearerPrincipal;
  }
}

export interface ApiDeps {
  bearer: Bearer;
  clients: ServiceClients;
  /** PUBLIC_URL without its trailing slash: the base of Location and Link. */
  issuer: string;
}

// RFC 6750 §3: error_description "MUST NOT include characters outside the set %x20-21 / %x23-5B / %x5D-7E".
const quoted = (value: string): string => value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, " ");

function challengesFor(resources: ProtectedResources, resource: ResourceName) {
  const metadata = `resource_metadata="${quoted(resources[resource].metadataUrl)}"`;
  /** `attributes` undefined: the challenge names no error (a request without a token). */
  const refusal = (status: number, error: string, description: string, attributes?: Record<string, string>) => {
    const parts = [`realm="bizcard"`, metadata];
    if (attributes) {
      const named = { error, error_description: description, ...attributes };
      parts.push(...Object.entries(named).map(([k, v]) => `${k}="${quoted(v)}"`));
    }
    return new HttpError(status, error, description, {
      "www-authenticate": `Bearer ${parts.join(", ")}`,
      "cache-control": "no-store",
    });
  };
  return {
    // RFC 6750 §3: without credentials, "the resource server SHOULD NOT include an error code".
    missingToken: () =>
      refusal(401, "invalid_token", "this resource needs an access token: send Authorization: Bearer <token>"),
    /** RFC 6750 §3.1 invalid_token: "The resource SHOULD respond with the HTTP 401 (Unauthorized) status code." */
    invalidToken: (description: string) => refusal(401, "invalid_token", description, {}),
    /** RFC 6750 §3.1 invalid_request: "uses more than one method for including an access token" (400). */
    invalidRequest: (description: string) => refusal(400, "invalid_request", description, {}),
    // RFC 6750 §3.1 insufficient_scope: "MAY include the "scope" attribute". It names every scope
    // needed, not only the missing ones, so a token asked for with exactly them works (MCP's step-up).
    insufficientScope(scopes: readonly string[]): HttpError {
      const scope = scopes.join(" ");
      const description =
        scopes.length === 1 ? `this resource needs the scope ${scope}` : `this request needs the scopes ${scope}`;
      return refusal(403, "insufficient_scope", description, { scope });
    },
  };
}

type Challenges = ReturnType<typeof challengesFor>;

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const MAX_TOKEN_LENGTH = 512;

const hasParameter = (value: unknown, name: string): boolean =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, name);

// A token in the query or a form body is 400 even next to a valid header: URIs end up in logs
// (RFC 6750 §5.3), so the refusal is loud rather than a 401 that reads like a bad token.
function presentedToken(request: FastifyRequest, challenges: Challenges): string {
  if (hasParameter(request.query, "access_token")) {
    throw challenges.invalidRequest("send the access token in the Authorization header (Bearer), never in the URL");
  }
  if (
    hasParameter(request.body, "access_token") &&
    request.headers["content-type"]?.startsWith("application/x-www-form-urlencoded")
  ) {
    throw challenges.invalidRequest("send the access token in the Authorization header (Bearer), not in the body");
  }
  const header = request.headers.authorization;
  if (header === undefined || !/^bearer(\s|$)/i.test(header)) throw challenges.missingToken();
  const match = BEARER.exec(header);
  if (!match || match[1]!.length > MAX_TOKEN_LENGTH) throw challenges.invalidToken("the access token is malformed");
  return match[1]!;
}

/** The auth service's invalid_token as ours; anything else goes to the common error handler. */
function fromAuthService(err: unknown, challenges: Challenges): unknown {
  if (err instanceof ConnectError && err.code === Code.PermissionDenied) {
    const [detail] = err.findDetails(OAuthErrorSchema);
    if (detail?.error === "invalid_token")
      return challenges.invalidToken(detail.errorDescription || "the access token is not valid");
  }
  return err;
}

export type Bearer = ReturnType<typeof createBearer>;

export function createBearer(cache: BearerCache, resources: ProtectedResources) {
  const byResource = { api: challengesFor(resources, "api"), mcp: challengesFor(resources, "mcp") };
  const accept = (principal: BearerPrincipal, resource: ResourceName): BearerPrincipal => {
    const challenges = byResource[resource];
    // An entry may outlive its token by less than a clock tick; never the expiry itself.
    if (principal.expiresAt <= Date.now()) throw challenges.invalidToken("the access token has expired");
    // RFC 8707 §2: the resource server checks that it is the token's audience (none: the REST API's).
    const audience = principal.audience || resources.api.identifier;
    if (audience !== resources[resource].identifier) {
      throw challenges.invalidToken(
        `this access token was issued for ${audience}; ask for one with resource=${resources[resource].identifier}`,
      );
    }
    return principal;
  };
  /** The request's principal: at once when its check is cached, else a promise of it. */
  const principalOf = (request: FastifyRequest, resource: ResourceName): BearerPrincipal | Promise<BearerPrincipal> => {
    const token = presentedToken(request, byResource[resource]);
    const cached = cache.cached(token);
    if (cached) return accept(cached, resource);
    return cache
      .lookup(token, () => rpcOptions(request))
      .then(
        (principal) => accept(principal, resource),
        (err: unknown) => {
          throw fromAuthService(err, byResource[resource]);
        },
      );
  };
  return {
    resources,
    challenges: (resource: ResourceName) => byResource[resource],
    /** The principal of the request's token, valid and issued for `resource`; throws the RFC 6750 answer. */
    authenticate: async (request: FastifyRequest, resource: ResourceName) => principalOf(request, resource),
    /** A preHandler: a valid token issued for `resource` holding every scope of `scope`. */
    requireScope(scope: string | readonly string[], resource: ResourceName = "api"): onRequestHookHandler {
      const needed = typeof scope === "string" ? [scope] : [...scope];
      const allowed = (request: FastifyRequest, principal: BearerPrincipal): Error | undefined => {
        if (!needed.every((s) => principal.scopes.includes(s))) return byResource[resource].insufficientScope(needed);
        request.bearer = principal;
        return undefined;
      };
      // A callback hook: a cached check (most requests) is answered without a promise.
      return function requireScope(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
        let found: BearerPrincipal | Promise<BearerPrincipal>;
        try {
          found = principalOf(request, resource);
        } catch (err) {
          return done(err as Error);
        }
        if (found instanceof Promise)
          found.then(
            (principal) => done(allowed(request, principal)),
            (err: Error) => done(err),
          );
        else done(allowed(request, found));
      };
    },
    organisation(
      principal: BearerPrincipal,
      load: (id: string) => Promise<{ id: string; name: string }>,
    ): Promise<PrincipalOrganisation> {
      if (!principal.organisation) {
        const loading = load(principal.organisationId).then(({ id, name }) => ({
          id,
          name,
          json: JSON.stringify({ id, name }),
        }));
        principal.organisation = loading;
        loading.then(
          (organisation) => {
            if (principal.organisation === loading) principal.organisationLoaded = organisation;
          },
          // A failure is not kept: the next request tries again.
          () => {
            if (principal.organisation === loading) principal.organisation = undefined;
          },
        );
      }
      return principal.organisation;
    },
  };
}
