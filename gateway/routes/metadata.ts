// The discovery documents: the authorization server's metadata (RFC 8414),
// for a strict client to configure itself, and each protected resource's (RFC
// 9728), which an agent reaches from a 401's resource_metadata.
import type { FastifyInstance } from "fastify";
import { ALL_SCOPES } from "../../services/auth/scopes.js";
import { GRANT_TYPES } from "../../services/auth/clients/grant-types.js";
import { DOCS_PATH } from "../openapi/docs-page.js";
import type { ProtectedResource, ProtectedResources } from "../../services/shared/protected-resources.js";
import { metadataRoute, protectedResourceRoute } from "../schemas/oauth-routes.js";

export interface RegistrationOptions {
  /** OAUTH_DYNAMIC_REGISTRATION: POST /oauth/register is served and advertised. */
  dynamicRegistration: boolean;
  /** OAUTH_CLIENT_METADATA_DOCUMENTS: an https client_id names the client's metadata document. */
  clientMetadataDocuments: boolean;
}

export const DEFAULT_REGISTRATION: RegistrationOptions = { dynamicRegistration: false, clientMetadataDocuments: true };

function authorizationServerMetadata(issuer: string, registration: RegistrationOptions): Record<string, unknown> {
  return {
    // RFC 8414 §3.3: "The "issuer" value returned MUST be identical to the authorization server's issuer identifier".
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    ...(registration.dynamicRegistration ? { registration_endpoint: `${issuer}/oauth/register` } : {}),
    scopes_supported: [...ALL_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: [...GRANT_TYPES],
    // "none": public clients, those with a metadata document among them.
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // RFC 7009 lets public clients revoke their own tokens (client_id only).
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    // RFC 7662: confidential clients only.
    introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
    // RFC 7636 / RFC 9700 §2.1.1: S256 only, "plain" is refused.
    code_challenge_methods_supported: ["S256"],
    // RFC 9207 §3: the authorization response carries iss.
    authorization_response_iss_parameter_supported: true,
    // Client ID Metadata Documents: an https client_id is fetched as the client's metadata.
    ...(registration.clientMetadataDocuments ? { client_id_metadata_document_supported: true } : {}),
  };
}

const NAMES = { api: "bizcard REST API", mcp: "bizcard MCP server" };

/** RFC 9728 §2: the metadata of one protected resource. */
function protectedResourceMetadata(issuer: string, resource: ProtectedResource): Record<string, unknown> {
  return {
    // RFC 9728 §3.3: "The "resource" value returned MUST be identical to the protected resource's resource identifier".
    resource: resource.identifier,
    authorization_servers: [issuer],
    scopes_supported: [...ALL_SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: NAMES[resource.name],
    resource_documentation: `${issuer}${DOCS_PATH}`,
  };
}

export function metadataRoutes(
  app: FastifyInstance,
  issuer: string,
  resources: ProtectedResources,
  registration: RegistrationOptions,
): void {
  const serve = (path: string, schema: object, document: Record<string, unknown>) => {
    const body = JSON.stringify(document);
    app.get(path, { schema }, async (_request, reply) =>
      reply.header("cache-control", "public, max-age=300").type("application/json; charset=utf-8").send(body),
    );
  };
  const metadata = authorizationServerMetadata(issuer, registration);
  serve("/.well-known/oauth-authorization-server", metadataRoute(metadata), metadata);
  const named = [
    ["api", "getApiResourceMetadata", "The REST API's protected resource metadata"],
    ["mcp", "getMcpResourceMetadata", "The MCP endpoint's protected resource metadata"],
  ] as const;
  for (const [name, operationId, summary] of named) {
    const document = protectedResourceMetadata(issuer, resources[name]);
    serve(resources[name].metadataPath, protectedResourceRoute(operationId, summary, document), document);
  }
}
