// The endpoints where a client with its credentials asks about a token or
// ends it: POST /oauth/revoke (RFC 7009; every gateway hears of a revoked
// access token and drops its cached check) and POST /oauth/introspect (RFC
// 7662, for confidential clients: whether a token is active, and what it stands for).
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { NO_STORE, OAuthError, invalidClient, oauthErrorHandler } from "../oauth-errors.js";
import { tokenRequest } from "../oauth-params.js";
import { INTROSPECT_ROUTE, REVOKE_ROUTE } from "../schemas/oauth-routes.js";

export function revokeRoutes(app: FastifyInstance, auth: Client<typeof AuthService>): void {
  app.post("/oauth/revoke", { schema: REVOKE_ROUTE, errorHandler: oauthErrorHandler }, async (request, reply) => {
    const { client, params } = tokenRequest(request);
    if (!params.token) throw new OAuthError("invalid_request", "token is required");
    await auth.revokeToken(
      { client, token: params.token, tokenTypeHint: params.token_type_hint ?? "", remoteAddress: request.ip },
      rpcOptions(request),
    );
    // RFC 7009 §2.2: 200 "if the token has been revoked successfully or if the client submitted
    // an invalid token"; the body is ignored, and `{}` suits clients that parse every answer as JSON.
    return reply.status(200).headers(NO_STORE).type("application/json; charset=utf-8").send("{}");
  });
}

export function introspectRoutes(app: FastifyInstance, auth: Client<typeof AuthService>, issuer: string): void {
  app.post(
    "/oauth/introspect",
    { schema: INTROSPECT_ROUTE, errorHandler: oauthErrorHandler },
    async (request, reply) => {
      // RFC 7662 §2.1: "the endpoint MUST also require some form of authorization": the client's secret.
      const { client, params } = tokenRequest(request);
      if (client.method === "none")
        throw invalidClient("introspection is for confidential clients: authenticate with the client secret");
      if (!params.token) throw new OAuthError("invalid_request", "token is required");
      const res = await auth.introspectToken(
        { client, token: params.token, tokenTypeHint: params.token_type_hint ?? "", remoteAddress: request.ip },
        rpcOptions(request),
      );
      reply.headers(NO_STORE);
      // RFC 7662 §2.2: an inactive token "SHOULD NOT include any additional information".
      if (!res.active) return reply.send({ active: false });
      return reply.send({
        active: true,
        ...(res.scope ? { scope: res.scope } : {}),
        client_id: res.clientId,
        token_type: res.tokenType || "Bearer",
        ...(res.exp ? { exp: Number(res.exp) } : {}),
        ...(res.iat ? { iat: Number(res.iat) } : {}),
        ...(res.sub ? { sub: res.sub } : {}),
        iss: res.iss || issuer,
        ...(res.aud ? { aud: res.aud } : {}),
      });
    },
  );
}
