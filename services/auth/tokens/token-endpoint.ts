// The token endpoint (RFC 6749 §3.2) as a short pipeline of named steps:
// the grant type, the client's authentication, the grant, the answer.
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { allowsGrantType } from "../clients/grant-types.js";
import { authorizationCodeGrant } from "../grants/authorization-code.js";
import { clientCredentialsGrant } from "../grants/client-credentials.js";
import type { AuthenticatedClient, GrantDeps, GrantModule } from "../grants/grant-module.js";
import { refreshTokenGrant } from "../grants/refresh-token.js";
import { InvalidClient, InvalidRequest, UnauthorizedClient, UnsupportedGrantType } from "../oauth-errors.js";
import { CLIENT_AUTHENTICATION_REQUIRED, type AuthenticateClient } from "./client-authentication.js";

const GRANT_MODULES = [authorizationCodeGrant, refreshTokenGrant, clientCredentialsGrant];
const byType = new Map<string, GrantModule>(GRANT_MODULES.map((g) => [g.grantType, g]));

export type TokenEndpointDeps = GrantDeps & { authenticateClient: AuthenticateClient };

export function createTokenEndpoint(
  deps: TokenEndpointDeps,
): (request: ExchangeTokenRequest) => Promise<ExchangeTokenResponse> {
  return async (request) => {
    const grant = grantOf(request);
    // No credentials at all: invalid_client, before the grant's parameters.
    if (!request.client?.clientId) throw new InvalidClient(CLIENT_AUTHENTICATION_REQUIRED);
    requireParameters(grant, request);
    const client = await deps.authenticateClient(request.client, request.remoteAddress);
    allowGrantType(client, grant);
    return grant.handle({ deps, client, request });
  };
}

/**
 * RFC 6749 §5.2 unsupported_grant_type: "The authorization grant type is not
 * supported by the authorization server." Judged here only: the gateway forwards grant_type as sent.
 */
function grantOf(request: ExchangeTokenRequest): GrantModule {
  if (!request.grantType) throw new InvalidRequest("grant_type is required");
  const grant = byType.get(request.grantType);
  if (!grant)
    throw new UnsupportedGrantType(`grant_type must be one of ${GRANT_MODULES.map((g) => g.grantType).join(", ")}`);
  return grant;
}

function requireParameters(grant: GrantModule, request: ExchangeTokenRequest): void {
  const missing = grant.required.filter((p) => !request[p.field]).map((p) => p.name);
  const verb = missing.length === 1 ? "is" : "are";
  if (missing.length) throw new InvalidRequest(`${missing.join(", ")} ${verb} required for ${grant.grantType}`);
}

/**
 * RFC 6749 §5.2 unauthorized_client: "The authenticated client is not authorized to use this authorization grant type."
 */
function allowGrantType(client: AuthenticatedClient, grant: GrantModule): void {
  if (!allowsGrantType(client.grantTypes, grant.grantType))
    throw new UnauthorizedClient(`this client may not use ${grant.grantType}`);
}
