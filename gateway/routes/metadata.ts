// GET /.well-known/oauth-authorization-server (RFC 8414): exactly what this
// server supports, so that a strict client (oauth4webapi, openid-client)
// configures itself from it.
import type { FastifyInstance } from "fastify";
import { ALL_SCOPES } from "../../services/auth/scopes.js";
import { GRANT_TYPES } from "../../services/auth/clients/grant-types.js";
import { metadataRoute } from "../schemas/oauth-routes.js";

export function authorizationServerMetadata(issuer: string): Record<string, unknown> {
  return {
    /*
     * RFC 8414 §2: "issuer REQUIRED. The authorization server's issuer
     * identifier, which is a URL that uses the "https" scheme and has no query
     * or fragment components." §3.3: "The "issuer" value returned MUST be
     * identical to the authorization server's issuer identifier value into
     * which the well-known URI string was inserted".
     */
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    scopes_supported: [...ALL_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [...GRANT_TYPES],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // RFC 7009 lets public clients revoke their own tokens (client_id only).
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // RFC 7662: confidential clients only.
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    // RFC 7636 / RFC 9700 §2.1.1: S256 only, "plain" is refused.
    code_challenge_methods_supported: ["S256"],
    // RFC 9207 §3: the authorization response carries iss.
    authorization_response_iss_parameter_supported: true,
  };
}

export function metadataRoutes(app: FastifyInstance, issuer: string): void {
  const metadata = authorizationServerMetadata(issuer);
  const body = JSON.stringify(metadata);
  app.get("/.well-known/oauth-authorization-server", { schema: metadataRoute(metadata) }, async (_request, reply) =>
    reply.header("cache-control", "public, max-age=300").type("application/json; charset=utf-8").send(body),
  );
}
