// POST /oauth/introspect (RFC 7662), for confidential clients: whether a
// token is active, and what it stands for.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { NO_STORE, OAuthError, invalidClient, oauthErrorHandler } from "../oauth-errors.js";
import { presentedClient, readParams } from "../oauth-params.js";
import { INTROSPECT_ROUTE } from "../schemas/oauth-routes.js";

export function introspectRoutes(app: FastifyInstance, auth: Client<typeof AuthService>, issuer: string): void {
  app.post(
    "/oauth/introspect",
    { schema: INTROSPECT_ROUTE, errorHandler: oauthErrorHandler },
    async (request, reply) => {
      const params = readParams(request.body);
      /*
       * RFC 7662 §2.1: "To prevent token scanning attacks, the endpoint MUST
       * also require some form of authorization to access this endpoint"; here,
       * a confidential client's authentication (RFC 6749 §2.3).
       */
      const client = presentedClient(request.headers.authorization, params);
      if (!client) throw invalidClient("client authentication is required (client_id and client_secret, or Basic)");
      if (client.method === "none")
        throw invalidClient("introspection is for confidential clients: authenticate with the client secret");
      // RFC 7662 §2.1: "token REQUIRED. The string value of the token."
      if (!params.token) throw new OAuthError("invalid_request", "token is required");
      const res = await auth.introspectToken(
        {
          client: { clientId: client.clientId, clientSecret: client.clientSecret, method: client.method },
          token: params.token,
          tokenTypeHint: params.token_type_hint ?? "",
          remoteAddress: request.ip,
        },
        rpcOptions(request),
      );
      reply.headers(NO_STORE);
      /*
       * RFC 7662 §2.2: "If the introspection call is properly authorized but
       * the token is not active, does not exist on this server, or the
       * protected resource is not allowed to introspect this particular token,
       * then the authorization server MUST return an introspection response
       * with the "active" field set to "false"." ... "SHOULD NOT include any
       * additional information about an inactive token".
       */
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
