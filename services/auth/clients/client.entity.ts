import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

export const ClientEntity = defineEntity({
  name: "OAuthClient",
  tableName: "client",
  properties: {
    /** "bc_" + random: what the application sends as client_id. */
    id: p.text().primary(),
    name: p.text(),
    redirectUris: p.json<string[]>(),
    scopes: p.json<string[]>(),
    public: p.boolean(),
    ownerOrganisationId: p.uuid().nullable(),
    /** SHA-256 of the secret (a 256-bit random value); null for public clients. */
    secretHash: p.text().nullable(),
    /** The grant types the client may use (clients/grant-types.ts), in GRANT_TYPES order. */
    grantTypes: p.json<string[]>(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
  },
  // A confidential client has a secret, a public one none.
  checks: [{ name: "client_secret_check", expression: `"public" = ("secret_hash" is null)` }],
});

export type Client = InferEntity<typeof ClientEntity>;
