import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import type { ResourceName } from "../../shared/protected-resources.js";
import { GrantEntity } from "../grants/grant.entity.js";

/** An opaque access token (bca_…), stored by its hash; read by one indexed statement per bearer check. */
export const AccessTokenEntity = defineEntity({
  name: "AccessToken",
  tableName: "access_token",
  properties: {
    hash: p.text().primary(),
    clientId: p.text(),
    /** The organisation the token acts for. */
    organisationId: p.uuid(),
    /** Null for client_credentials. */
    memberId: p.uuid().nullable(),
    /** Null for client_credentials (no grant). Its index holds only the rows that have one (migration 2026-12-16). */
    grantId: () =>
      p
        .manyToOne(GrantEntity)
        .mapToPk()
        .fieldName("grant_id")
        .nullable()
        .foreignKeyName("access_token_grant_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("access_token_grant_id_index"),
    /** The refresh-token family it was issued with (revoked with that family); null without one, and then not in its index (migration 2026-12-16). */
    family: p.uuid().nullable().index("access_token_family_index"),
    scopes: p.json<string[]>(),
    /** RFC 8707: the protected resource it is for (services/shared/protected-resources.ts). */
    audience: p.text().$type<ResourceName>().default("api"),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3).index("access_token_expires_at_index"),
  },
  // Withdrawing a grant also ends the pair's client_credentials tokens.
  indexes: [{ name: "access_token_pair_index", properties: ["organisationId", "clientId"] }],
});

export type AccessToken = InferEntity<typeof AccessTokenEntity>;
