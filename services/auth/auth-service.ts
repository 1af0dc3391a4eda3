// AuthService: the client registry (here), the browser flow
// (interactions/interaction-handlers.ts) and the token side
// (tokens/token-handlers.ts), put together into one implementation.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { invalid, notFound, requireUuid } from "../shared/validation.js";
import type { AuthServiceDeps } from "./auth-service-deps.js";
import { ClientEntity } from "./clients/client.entity.js";
import { toClientMessage } from "./clients/client-message.js";
import { hashSecret, newClientId, newClientSecret } from "./clients/client-secret.js";
import { checkGrantTypes } from "./clients/grant-types.js";
import { checkRedirectUri } from "./clients/redirect-uri.js";
import { createRegistrationHandlers } from "./clients/registration.js";
import { ALL_SCOPES, isScope } from "./scopes.js";
import { createInteractionHandlers } from "./interactions/interaction-handlers.js";
import { createTokenHandlers } from "./tokens/token-handlers.js";

export { AUTH_SCHEMA } from "./auth-schema.js";
export type { AuthServiceDeps } from "./auth-service-deps.js";

export function createAuthService(deps: AuthServiceDeps): Partial<ServiceImpl<typeof AuthService>> {
  return {
    ...createClientHandlers(deps),
    ...createRegistrationHandlers(deps),
    ...createTokenHandlers(deps),
    ...createInteractionHandlers(deps),
  };
}

function createClientHandlers(
  deps: AuthServiceDeps,
): Pick<ServiceImpl<typeof AuthService>, "createClient" | "getClient"> {
  const { orm } = deps;
  return {
    async createClient(req) {
      const name = req.name.trim();
      if (!name) throw invalid("name", "required");
      if ([...name].length > 100 || /[\u0000-\u001f\u007f]/.test(name))
        throw invalid("name", "at most 100 printable characters");
      if (req.redirectUris.length > 10) throw invalid("redirect_uris", "at most 10");
      const redirectUris = [
        ...new Set(
          req.redirectUris.map((u) =>
            checkRedirectUri(u, { allowInsecure: deps.allowInsecureRedirects, public: req.public }),
          ),
        ),
      ];
      const unknown = req.scopes.filter((s) => !isScope(s));
      if (unknown.length)
        throw invalid("scopes", `unknown scope ${unknown.join(", ")}; known: ${ALL_SCOPES.join(" ")}`);
      const scopes = req.scopes.length ? ALL_SCOPES.filter((s) => req.scopes.includes(s)) : [...ALL_SCOPES];
      if (redirectUris.length === 0 && !req.ownerOrganisationId) {
        throw invalid(
          "redirect_uris",
          "at least one, unless the client is owned by an organisation (client_credentials)",
        );
      }
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
      const secret = req.public ? "" : newClientSecret();
      const em = orm.em.fork();
      const client = em.create(ClientEntity, {
        id: newClientId(),
        name,
        redirectUris,
        scopes,
        public: req.public,
        ownerOrganisationId,
        secretHash: secret ? hashSecret(secret) : null,
        grantTypes,
        createdAt: new Date(),
      });
      await em.flush();
      return { client: toClientMessage(client), clientSecret: secret };
    },

    async getClient(req) {
      const client = req.clientId ? await orm.em.fork().findOne(ClientEntity, { id: req.clientId }) : null;
      if (!client) throw notFound("client");
      return { client: toClientMessage(client) };
    },
  };
}
