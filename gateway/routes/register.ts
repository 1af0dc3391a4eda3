// POST /oauth/register: dynamic client registration (RFC 7591), documented
// always, 404 unless OAUTH_DYNAMIC_REGISTRATION. The auth service judges it.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { requireJson } from "../body-parsers.js";
import { rpcOptions } from "../clients.js";
import { HttpError } from "../errors.js";
import { NO_STORE, oauthErrorHandler } from "../oauth-errors.js";
import { METADATA_MEMBERS, REGISTER_ROUTE } from "../schemas/registration.js";
import { validatorAnswering } from "../validation.js";

type Member = (typeof METADATA_MEMBERS)[number];

export function registerRoutes(app: FastifyInstance, auth: Client<typeof AuthService>, enabled: boolean): void {
  app.post(
    "/oauth/register",
    {
      schema: REGISTER_ROUTE,
      errorHandler: oauthErrorHandler,
      // RFC 7591 §3.2.2: a member of the wrong type is invalid_client_metadata, not invalid_request.
      validatorCompiler: validatorAnswering<typeof REGISTER_ROUTE>("invalid_client_metadata"),
      // Off: nothing of the request is read.
      onRequest: async () => {
        if (!enabled)
          throw new HttpError(404, "not_found", "dynamic client registration is not enabled on this server");
      },
      // RFC 7591 §3.1: "with a content type of "application/json"".
      preValidation: async (request: FastifyRequest) => requireJson(request, "the client metadata"),
    },
    async (request, reply) => {
      const body = request.body as Partial<Record<Member, string | string[] | null>>;
      // RFC 7591 §2: "The authorization server MUST ignore any client
      // metadata sent by the client that it does not understand".
      const str = (m: Member) => (typeof body[m] === "string" ? body[m] : "");
      const list = (m: Member) => (Array.isArray(body[m]) ? body[m] : []);
      const res = await auth.registerClient(
        {
          redirectUris: list("redirect_uris"),
          tokenEndpointAuthMethod: str("token_endpoint_auth_method"),
          grantTypes: list("grant_types"),
          responseTypes: list("response_types"),
          clientName: str("client_name"),
          clientUri: str("client_uri"),
          scope: str("scope"),
          applicationType: str("application_type"),
          remoteAddress: request.ip,
          presentFields: METADATA_MEMBERS.filter((m) => body[m] !== undefined && body[m] !== null),
        },
        rpcOptions(request),
      );
      const c = res.client!;
      // RFC 7591 §3.2.1: "the authorization server MUST return all registered
      // metadata about the client"; client_secret_expires_at: "0 if it will not expire".
      return reply
        .status(201)
        .headers(NO_STORE)
        .send({
          client_id: c.clientId,
          ...(res.clientSecret ? { client_secret: res.clientSecret, client_secret_expires_at: 0 } : {}),
          client_id_issued_at: Number(c.createTime?.seconds ?? 0n),
          redirect_uris: c.redirectUris,
          token_endpoint_auth_method: c.tokenEndpointAuthMethod,
          grant_types: c.grantTypes,
          response_types: ["code"],
          client_name: c.name,
          ...(c.clientUri ? { client_uri: c.clientUri } : {}),
          scope: c.scopes.join(" "),
          application_type: c.applicationType,
        });
    },
  );
}
