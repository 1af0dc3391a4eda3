// The client registry's RPCs beyond CreateClient and GetClient: dynamic
// client registration (RFC 7591, POST /oauth/register), and the list and
// deletion of clients that `bizcard client list|delete` call.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ClientRegistration, AuthService } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { notFound } from "../../shared/validation.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import type { AuthServiceDeps } from "../auth-service-deps.js";
import { enqueueGrantRevoked } from "../grants/grant-events.js";
import { oauthHandler } from "../oauth-errors.js";
import { createAddressLimit } from "../rate-limit/address-limit.js";
import { ClientEntity, type ClientRegistrationKind } from "./client.entity.js";
import { checkClientMetadata } from "./client-metadata.js";
import { REGISTRATION, toClientMessage } from "./client-message.js";
import { hashSecret, newClientId, newClientSecret } from "./client-secret.js";

export type RegistrationHandlers = Pick<
  ServiceImpl<typeof AuthService>,
  "registerClient" | "listClients" | "deleteClient"
>;

const KIND_OF = new Map<ClientRegistration, ClientRegistrationKind>(
  (Object.entries(REGISTRATION) as [ClientRegistrationKind, ClientRegistration][]).map(([kind, value]) => [
    value,
    kind,
  ]),
);

export function createRegistrationHandlers(deps: AuthServiceDeps): RegistrationHandlers {
  const { orm, config } = deps;
  // Every registration attempt counts, a refused one too: the endpoint is open to anyone.
  const limit = createAddressLimit(orm, AUTH_SCHEMA, {
    name: "registration",
    points: config.OAUTH_REGISTRATION_LIMIT,
    windowSeconds: 3600,
    description: "too many client registrations from this address; try again later",
  });
  const events = { schema: AUTH_SCHEMA, subjectPrefix: config.NATS_SUBJECT_PREFIX };
  const t = (table: string) => `"${AUTH_SCHEMA}"."${table}"`;

  return {
    registerClient: oauthHandler(async (req) => {
      // The gateway answers 404 itself when registration is off; a service whose own configuration says off refuses too.
      if (!config.OAUTH_DYNAMIC_REGISTRATION) throw notFound("dynamic client registration");
      await limit.consume(req.remoteAddress);
      const metadata = checkClientMetadata(req, { allowInsecureRedirects: deps.allowInsecureRedirects });
      // RFC 7591 §3.2.1: "client_secret OPTIONAL. OAuth 2.0 client secret string." Only a confidential client gets one.
      const secret = metadata.public ? "" : newClientSecret();
      const em = orm.em.fork();
      const client = em.create(ClientEntity, {
        id: newClientId(),
        name: metadata.name,
        redirectUris: metadata.redirectUris,
        scopes: metadata.scopes,
        public: metadata.public,
        ownerOrganisationId: null,
        secretHash: secret ? hashSecret(secret) : null,
        grantTypes: metadata.grantTypes,
        createdAt: new Date(),
        registration: "dynamic",
        clientUri: metadata.clientUri,
        applicationType: metadata.applicationType,
        tokenEndpointAuthMethod: metadata.tokenEndpointAuthMethod,
      });
      await em.flush();
      return { client: toClientMessage(client), clientSecret: secret };
    }),

    async listClients(req) {
      const kind = KIND_OF.get(req.registration);
      const clients = await orm.em
        .fork()
        .find(ClientEntity, kind ? { registration: kind } : {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { clients: clients.map(toClientMessage) };
    },

    async deleteClient(req) {
      const found = await orm.em.fork().transactional(async (em) => {
        // Locked first: a grant or token being written for it waits (its
        // foreign key check), then fails once the client is gone.
        const locked: unknown[] = await em.execute(`select "id" from ${t("client")} where "id" = ? for update`, [
          req.clientId,
        ]);
        if (locked.length === 0) return { deleted: false, events: 0 };
        // Every organisation the client could act for: its grants', and its
        // tokens' (client_credentials tokens have no grant).
        const pairs: { organisation_id: string }[] = await em.execute(
          `select "organisation_id" from ${t("grant")} where "client_id" = ?
           union select "organisation_id" from ${t("access_token")} where "client_id" = ?`,
          [req.clientId, req.clientId],
        );
        // Its grants, codes and tokens go with it (foreign keys, on delete cascade).
        await em.execute(`delete from ${t("client")} where "id" = ?`, [req.clientId]);
        // So that webhooks of the pair stop and gateways drop cached bearer checks.
        for (const { organisation_id } of pairs) {
          await enqueueGrantRevoked(
            em,
            events,
            { organisationId: organisation_id, clientId: req.clientId },
            "withdrawn",
          );
        }
        return { deleted: true, events: pairs.length };
      });
      if (!found.deleted) throw notFound("client");
      if (found.events) deps.onEventCommitted?.();
      return {};
    },
  };
}
