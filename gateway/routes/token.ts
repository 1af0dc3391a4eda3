// POST /oauth/token (RFC 6749 §3.2): the parameters and the client's
// credentials, handed to the auth service, which owns every rule of the grants.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcOptions } from "../clients.js";
import { oauthTokenErrors, oauthTokensIssued } from "../../services/shared/metrics/metrics.js";
import { NO_STORE, oauthErrorFrom, oauthErrorHandler } from "../oauth-errors.js";
import { presentedClient, readParams, readRepeated } from "../oauth-params.js";
import { TOKEN_ROUTE } from "../schemas/oauth-routes.js";

/**
 * The metric labels: RFC 6749's grant types and §5.2 error codes; anything else is one bucket, never the sent value.
 */
const GRANT_TYPES = new Set(["authorization_code", "client_credentials", "refresh_token"]);
const TOKEN_ERRORS = new Set([
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "invalid_target",
]);

const tokenErrorHandler: typeof oauthErrorHandler = (err, request, reply) => {
  const known = oauthErrorFrom(err);
  const error = known && known.status < 500 ? (TOKEN_ERRORS.has(known.error) ? known.error : "other") : "server_error";
  oauthTokenErrors.inc({ error });
  return oauthErrorHandler(err, request, reply);
};

export function tokenRoutes(app: FastifyInstance, auth: Client<typeof AuthService>): void {
  app.post("/oauth/token", { schema: TOKEN_ROUTE, errorHandler: tokenErrorHandler }, async (request, reply) => {
    // RFC 8707 §2: resource may be repeated; the auth service judges how many.
    const params = readParams(request.body, ["resource"]);
    // grant_type, and whether credentials are needed, are the auth service's
    // to judge (tokens/token-endpoint.ts): a request without credentials goes
    // there too, so that an unknown grant_type is answered as such first.
    const client = presentedClient(request.headers.authorization, params);
    const exchange = {
      grantType: params.grant_type ?? "",
      client,
      code: params.code ?? "",
      redirectUri: params.redirect_uri ?? "",
      codeVerifier: params.code_verifier ?? "",
      refreshToken: params.refresh_token ?? "",
      scope: params.scope ?? "",
      resource: readRepeated(request.body, "resource"),
      remoteAddress: request.ip,
    };
    const token = await auth.exchangeToken(exchange, rpcOptions(request));
    oauthTokensIssued.inc({ grant_type: GRANT_TYPES.has(exchange.grantType) ? exchange.grantType : "other" });
    return reply.headers(NO_STORE).send({
      access_token: token.accessToken,
      token_type: token.tokenType,
      expires_in: Number(token.expiresIn),
      ...(token.refreshToken ? { refresh_token: token.refreshToken } : {}),
      ...(token.scope ? { scope: token.scope } : {}),
    });
  });
}
