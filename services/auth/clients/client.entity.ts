import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** How a client came to be known (bizcard.auth.v1.ClientRegistration). */
export type ClientRegistrationKind = "operator" | "dynamic" | "metadata_document";

export const ClientEntity = defineEntity({
  name: "OAuthClient",
  tableName: "client",
  properties: {
    /** "bc_" + random: what the application sends as client_id; a metadata document client's is its https URL. */
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
    registration: p.text().$type<ClientRegistrationKind>().default("operator"),
    /** RFC 7591 §2 client_uri, when given. */
    clientUri: p.text().nullable(),
    /** RFC 7591 §2 application_type: "web" or "native". */
    applicationType: p.text().$type<"web" | "native">().default("web"),
    /**
     * RFC 7591 §2 token_endpoint_auth_method as registered; null: none
     * for public clients, client_secret_basic otherwise.
     */
    tokenEndpointAuthMethod: p.text().nullable(),
    /** A metadata document client: when its document was fetched, and when it must be fetched again. */
    metadataFetchedAt: p.datetime(3).nullable(),
    metadataExpiresAt: p.datetime(3).nullable(),
  },
  // A confidential client has a secret, a public one none.
  checks: [{ name: "client_secret_check", expression: `"public" = ("secret_hash" is null)` }],
  indexes: [{ name: "client_registration_index", properties: ["registration", "createdAt"] }],
});

export type Client = InferEntity<typeof ClientEntity>;
