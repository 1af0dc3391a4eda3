// POST /oauth/token (RFC 6749 §3.2). The gateway reads the form or JSON
// parameters and the client's credentials, and hands the grant to the auth
// service, which owns every rule of the grants; answers are never cached.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { NO_STORE, OAuthError, invalidClient, oauthErrorHandler } from "../oauth-errors.js";
import { presentedClient, readParams } from "../oauth-params.js";

export const GRANT_TYPES = ["authorization_code", "refresh_token", "client_credentials"] as const;

export function tokenRoutes(app: FastifyInstance, auth: Client<typeof AuthService>): void {
  app.post("/oauth/token", { errorHandler: oauthErrorHandler }, async (request, reply) => {
    const params = readParams(request.body);
    const grantType = params.grant_type;
    if (!grantType) throw new OAuthError("invalid_request", "grant_type is required");
    if (!(GRANT_TYPES as readonly string[]).includes(grantType)) {
      throw new OAuthError("unsupported_grant_type", `grant_type must be one of ${GRANT_TYPES.join(", ")}`);
    }
    const client = presentedClient(request.headers.authorization, params);
    if (!client) throw invalidClient("client authentication is required (client_id and client_secret, or Basic)");
    const exchange = {
      grantType,
      client: { clientId: client.clientId, clientSecret: client.clientSecret, method: client.method },
      code: params.code ?? "",
      redirectUri: params.redirect_uri ?? "",
      codeVerifier: params.code_verifier ?? "",
      refreshToken: params.refresh_token ?? "",
      scope: params.scope ?? "",
      remoteAddress: request.ip,
    };
    const token = await auth.exchangeToken(exchange, rpcOptions(request));
    return reply.headers(NO_STORE).send({
      access_token: token.accessToken,
      token_type: token.tokenType,
      expires_in: Number(token.expiresIn),
      ...(token.refreshToken ? { refresh_token: token.refreshToken } : {}),
      ...(token.scope ? { scope: token.scope } : {}),
    });
  });
}
