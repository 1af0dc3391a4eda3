// The client registry's RPCs: the operator's CreateClient and GetClient,
// dynamic client registration (RFC 7591, POST /oauth/register), and the list
// and deletion of clients that `bizcard client list|delete` call.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { invalid, notFound, requireUuid } from "../../shared/validation.js";
import { AUTH_SCHEMA } from "../auth-schema.js";
import type { AuthServiceDeps } from "../auth-service-deps.js";
import { enqueueGrantRevoked } from "../grants/grant-events.js";
import { oauthHandler } from "../oauth-errors.js";
import { createAddressLimit } from "../rate-limit/address-limit.js";
import { ALL_SCOPES, isScope, scopesOrAll } from "../scopes.js";
import { ClientEntity, type Client, type ClientRegistrationKind } from "./client.entity.js";
import { checkClientMetadata, isPrintableName } from "./client-metadata.js";
import { REGISTRATION, toClientMessage } from "./client-message.js";
import { hashSecret, newClientId, newClientSecret } from "./client-secret.js";
import { checkGrantTypes } from "./grant-types.js";
import { checkRedirectUri } from "./redirect-uri.js";

type NewClient = Pick<Client, "name" | "redirectUris" | "scopes" | "public" | "ownerOrganisationId" | "grantTypes"> &
  Partial<Pick<Client, "registration" | "clientUri" | "applicationType" | "tokenEndpointAuthMethod">>;

export function createRegistrationHandlers(deps: AuthServiceDeps): Partial<ServiceImpl<typeof AuthService>> {
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

  // RFC 7591 §3.2.1: "client_secret OPTIONAL. OAuth 2.0 client secret string." Only a confidential client gets one.
  const insertClient = async (fields: NewClient) => {
    const secret = fields.public ? "" : newClientSecret();
    const em = orm.em.fork();
    const client = em.create(ClientEntity, {
      ...fields,
      id: newClientId(),
      secretHash: secret ? hashSecret(secret) : null,
      createdAt: new Date(),
    });
    await em.flush();
    return { client: toClientMessage(client), clientSecret: secret };
  };

  return {
    async createClient(req) {
      const name = req.name.trim();
      if (!name) throw invalid("name", "required");
      if (!isPrintableName(name)) throw invalid("name", "at most 100 printable characters");
      if (req.redirectUris.length > 10) throw invalid("redirect_uris", "at most 10");
      const redirectOptions = { allowInsecure: deps.allowInsecureRedirects, public: req.public };
      const redirectUris = [...new Set(req.redirectUris.map((u) => checkRedirectUri(u, redirectOptions)))];
      const unknown = req.scopes.filter((s) => !isScope(s));
      if (unknown.length)
        throw invalid("scopes", `unknown scope ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`);
      if (redirectUris.length === 0 && !req.ownerOrganisationId)
        throw invalid(
          "redirect_uris",
          "at least one, unless the client is owned by an organisation (client_credentials)",
        );
      let ownerOrganisationId: string | null = null;
      if (req.ownerOrganisationId) {
        if (req.public)
          throw invalid("owner_organisation_id", "a public client cannot be owned (client_credentials needs a secret)");
        ownerOrganisationId = requireUuid("owner_organisation_id", req.ownerOrganisationId);
        try {
          await deps.organisations.getOrganisation({ id: ownerOrganisationId });
        } catch (err) {
          if (ConnectError.from(err).code === Code.NotFound)
            throw invalid("owner_organisation_id", "no such organisation");
          throw err;
        }
      }
      const grantTypes = checkGrantTypes(req.grantTypes, { public: req.public, ownerOrganisationId, redirectUris });
      return insertClient({
        name,
        redirectUris,
        scopes: scopesOrAll(req.scopes),
        public: req.public,
        ownerOrganisationId,
        grantTypes,
      });
    },

    async getClient(req) {
      const client = req.clientId ? await orm.em.fork().findOne(ClientEntity, { id: req.clientId }) : null;
      if (!client) throw notFound("client");
      return { client: toClientMessage(client) };
    },

    registerClient: oauthHandler(async (req) => {
      // The gateway answers 404 itself when registration is off; a
      // service whose own configuration says off refuses too.
      if (!config.OAUTH_DYNAMIC_REGISTRATION) throw notFound("dynamic client registration");
      await limit.consume(req.remoteAddress);
      const metadata = checkClientMetadata(req, { allowInsecureRedirects: deps.allowInsecureRedirects });
      return insertClient({ ...metadata, ownerOrganisationId: null, registration: "dynamic" });
    }),

    async listClients(req) {
      const kind = (Object.keys(REGISTRATION) as ClientRegistrationKind[]).find(
        (k) => REGISTRATION[k] === req.registration,
      );
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
          const pair = { organisationId: organisation_id, clientId: req.clientId };
          await enqueueGrantRevoked(em, events, pair, "withdrawn");
        }
        return { deleted: true, events: pairs.length };
      });
      if (!found.deleted) throw notFound("client");
      if (found.events) deps.onEventCommitted?.();
      return {};
    },
  };
}
