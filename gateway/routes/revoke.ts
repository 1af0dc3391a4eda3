// POST /oauth/revoke (RFC 7009): a client revokes one of its access or
// refresh tokens. The auth service checks the client and revokes; revoking a
// refresh token ends the tokens issued with it, and every gateway hears of a
// revoked access token (bizcard.token.revoked) and drops its cached check.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { NO_STORE, OAuthError, invalidClient, oauthErrorHandler } from "../oauth-errors.js";
import { presentedClient, readParams } from "../oauth-params.js";
import { REVOKED_JSON, revokeRoute } from "../schemas/oauth-routes.js";

export function revokeRoutes(app: FastifyInstance, auth: Client<typeof AuthService>): void {
  app.post(
    "/oauth/revoke",
    { schema: revokeRoute(REVOKED_JSON), errorHandler: oauthErrorHandler },
    async (request, reply) => {
      const params = readParams(request.body);
      /*
       * RFC 7009 §2.1: "The client also includes its authentication credentials
       * as described in Section 2.3. of [RFC6749]." (A public client names
       * itself with client_id.)
       */
      const client = presentedClient(request.headers.authorization, params);
      if (!client) throw invalidClient("client authentication is required (client_id and client_secret, or Basic)");
      // RFC 7009 §2.1: "token REQUIRED. The token that the client wants to get revoked."
      if (!params.token) throw new OAuthError("invalid_request", "token is required");
      await auth.revokeToken(
        {
          client: { clientId: client.clientId, clientSecret: client.clientSecret, method: client.method },
          token: params.token,
          tokenTypeHint: params.token_type_hint ?? "",
          remoteAddress: request.ip,
        },
        rpcOptions(request),
      );
      /*
       * RFC 7009 §2.2: "The authorization server responds with HTTP status code
       * 200 if the token has been revoked successfully or if the client
       * submitted an invalid token. [...] The content of the response body is
       * ignored by the client as all necessary information is conveyed in the
       * response code."
       * The body may be anything, then; it is `{}` as JSON because widely used
       * client libraries parse every answer of the authorization server's
       * endpoints as JSON and fail on an empty one.
       */
      return reply.status(200).headers(NO_STORE).type("application/json; charset=utf-8").send("{}");
    },
  );
}
