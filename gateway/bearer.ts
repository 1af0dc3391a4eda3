// Bearer token checks for the protected resources (RFC 6750): the access token
// in the Authorization header only, resolved through the bearer cache
// (bearer-cache.ts), issued for the resource asked for (its audience, RFC
// 8707; services/shared/protected-resources.ts), with the scopes each route
// declares:
//
//   app.get("/oauth/me", { preHandler: bearer.requireScope("organisation:read") }, handler)
//   app.post("/mcp", { preHandler: bearer.requireScope([], "mcp") }, handler)
//
// The handler finds the token's principal in request.bearer. Every challenge
// names the resource's metadata (RFC 9728 §5.1 resource_metadata), which is
// how an agent that holds no token finds the authorization server.
//
// Decisions where RFC 6750 leaves a choice:
// - A token in the query (access_token=) or in a form body is refused with
//   400 invalid_request (§3.1: "includes an unsupported parameter [...] uses
//   more than one method for including an access token"), even next to a
//   valid header: URIs end up in logs and histories (§5.3), so the refusal is
//   loud rather than a 401 that reads like a bad token.
// - No token (or another scheme than Bearer): 401 with
//   `WWW-Authenticate: Bearer realm="bizcard"` and no error attribute (§3.1);
//   the body still has the one error shape, with error "invalid_token".
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction, preHandlerHookHandler } from "fastify";
import { OAuthErrorSchema } from "../gen/bizcard/auth/v1/auth_pb.js";
import type { BearerCache, BearerPrincipal, PrincipalOrganisation } from "./bearer-cache.js";
import { rpcOptions } from "./clients.js";
import { HttpError } from "./errors.js";
import type { ProtectedResources, ResourceName } from "../services/shared/protected-resources.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by requireScope: the access token's principal. */
    bearer?: BearerPrincipal;
  }
}

export const REALM = "bizcard";

/**
 * RFC 6750 §3: "The "error_description" attribute [...] values MUST NOT
 * include characters outside the set %x20-21 / %x23-5B / %x5D-7E."
 */
function quoted(value: string): string {
  return value.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, " ");
}

/**
 * The RFC 6750 §3 challenge of one resource. RFC 9728 §5.1: "the
 * resource_metadata parameter [...] The URL of the protected resource
 * metadata", in every challenge, so a client without a token learns where
 * to get one.
 */
export type Challenges = ReturnType<typeof challengesFor>;

export function challengesFor(resources: ProtectedResources, resource: ResourceName) {
  const metadataUrl = resources[resource].metadataUrl;
  const challenge = (attributes: Record<string, string> = {}): string => {
    const parts = [
      `realm="${REALM}"`,
      `resource_metadata="${quoted(metadataUrl)}"`,
      ...Object.entries(attributes).map(([k, v]) => `${k}="${quoted(v)}"`),
    ];
    return `Bearer ${parts.join(", ")}`;
  };
  const bearerError = (
    status: number,
    error: string,
    description: string,
    attributes: Record<string, string> = {},
  ): HttpError =>
    new HttpError(status, error, description, {
      "www-authenticate": challenge({ error, error_description: description, ...attributes }),
      "cache-control": "no-store",
    });
  return {
    /**
     * RFC 6750 §3: "If the protected resource request does not include
     * authentication credentials [...] the resource server SHOULD NOT include an
     * error code or other error information." ... "WWW-Authenticate: Bearer realm="example""
     */
    missingToken(): HttpError {
      return new HttpError(
        401,
        "invalid_token",
        "this resource needs an access token: send Authorization: Bearer <token>",
        {
          "www-authenticate": challenge(),
          "cache-control": "no-store",
        },
      );
    },
    /**
     * RFC 6750 §3.1 invalid_token: "The access token provided is expired,
     * revoked, malformed, or invalid for other reasons. The resource SHOULD
     * respond with the HTTP 401 (Unauthorized) status code."
     */
    invalidToken(description: string): HttpError {
      return bearerError(401, "invalid_token", description);
    },
    /**
     * RFC 6750 §3.1 invalid_request: "The request is missing a required
     * parameter, includes an unsupported parameter or parameter value, repeats the
     * same parameter, uses more than one method for including an access token, or
     * is otherwise malformed. The resource server SHOULD respond with the HTTP 400
     * (Bad Request) status code."
     */
    invalidRequest(description: string): HttpError {
      return bearerError(400, "invalid_request", description);
    },
    /**
     * RFC 6750 §3.1 insufficient_scope: "The request requires higher privileges
     * than provided by the access token. The resource server SHOULD respond with
     * the HTTP 403 (Forbidden) status code and MAY include the "scope" attribute
     * with the scope necessary to access the protected resource." The scope
     * attribute names every scope the operation needs, not only the missing
     * ones, so a client that asks for exactly it gets a token that works (MCP's
     * step-up authorization); the answer is the same on every retry.
     */
    insufficientScope(scopes: readonly string[]): HttpError {
      const scope = scopes.join(" ");
      const description =
        scopes.length === 1 ? `this resource needs the scope ${scope}` : `this request needs the scopes ${scope}`;
      return bearerError(403, "insufficient_scope", description, { scope });
    },
  };
}

/**
 * RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token, where
 * b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
 * The scheme is case-insensitive (RFC 9110 §11.1).
 */
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const MAX_TOKEN_LENGTH = 512;

function hasParameter(value: unknown, name: string): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, name);
}

/** The access token of the request, or the error to answer with. */
function presentedToken(request: FastifyRequest, challenges: Challenges): string {
  // RFC 6750 §2.3 (URI query parameter) and §2.2 (form body) are methods this server does not support.
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

export interface Bearer {
  /** The resources and their identifiers (for metadata and the MCP route). */
  readonly resources: ProtectedResources;
  /** The challenges of one resource (for answers a route writes itself, such as a tool's step-up). */
  challenges(resource: ResourceName): Challenges;
  /**
   * A preHandler: a valid access token issued for `resource` (the REST API by
   * default) holding every scope of `scope`, else the RFC 6750 answer.
   */
  requireScope(scope: string | readonly string[], resource?: ResourceName): preHandlerHookHandler;
  /** The principal of the request's token, valid and issued for `resource`; throws the RFC 6750 answer. */
  authenticate(request: FastifyRequest, resource: ResourceName): Promise<BearerPrincipal>;
  /** The organisation of a principal (cached with it). */
  organisation(
    principal: BearerPrincipal,
    load: (id: string) => Promise<{ id: string; name: string }>,
  ): Promise<PrincipalOrganisation>;
}

export function createBearer(cache: BearerCache, resources: ProtectedResources): Bearer {
  const byResource = { api: challengesFor(resources, "api"), mcp: challengesFor(resources, "mcp") };
  /** The checks of a principal that the cache does not make: its expiry and its audience. */
  const accept = (principal: BearerPrincipal, resource: ResourceName): BearerPrincipal => {
    const challenges = byResource[resource];
    // An entry may outlive its token by less than a clock tick; never the expiry itself.
    if (principal.expiresAt <= Date.now()) throw challenges.invalidToken("the access token has expired");
    // RFC 8707 §2: the resource server checks that it is the token's audience.
    // A token without an audience is the REST API's.
    const audience = principal.audience || resources.api.identifier;
    if (audience !== resources[resource].identifier) {
      throw challenges.invalidToken(
        `this access token was issued for ${audience}; ask for one with resource=${resources[resource].identifier}`,
      );
    }
    return principal;
  };
  const lookup = (request: FastifyRequest, token: string, resource: ResourceName): Promise<BearerPrincipal> =>
    cache
      .lookup(token, () => rpcOptions(request))
      .then(
        (principal) => accept(principal, resource),
        (err: unknown) => {
          throw fromAuthService(err, byResource[resource]);
        },
      );
  /**
   * The request's principal, valid and issued for `resource`: at once when
   * its check is cached, else a promise of it. Throws (or the promise
   * rejects with) the RFC 6750 answer.
   */
  const principalOf = (request: FastifyRequest, resource: ResourceName): BearerPrincipal | Promise<BearerPrincipal> => {
    const token = presentedToken(request, byResource[resource]);
    const cached = cache.cached(token);
    return cached ? accept(cached, resource) : lookup(request, token, resource);
  };
  const authenticate = (request: FastifyRequest, resource: ResourceName): Promise<BearerPrincipal> => {
    try {
      return Promise.resolve(principalOf(request, resource));
    } catch (err) {
      return Promise.reject(err);
    }
  };
  return {
    resources,
    challenges: (resource) => byResource[resource],
    authenticate,
    requireScope(scope, resource = "api") {
      const needed = typeof scope === "string" ? [scope] : [...scope];
      /** The principal's scopes hold every one needed: it is the request's; else the refusal. */
      const allowed = (request: FastifyRequest, principal: BearerPrincipal): Error | undefined => {
        if (!needed.every((s) => principal.scopes.includes(s))) return byResource[resource].insufficientScope(needed);
        request.bearer = principal;
        return undefined;
      };
      // A callback hook: a cached check (most requests) is answered without a
      // promise, which matters where async hooks are on (Node 20 with
      // AsyncLocalStorage in the process: every promise pays for them).
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
    organisation(principal, load) {
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
