import { defineEntity, p } from "@mikro-orm/core";
import type { ResourceName } from "../../shared/protected-resources.js";
import { GrantEntity } from "../grants/grant.entity.js";

/** An opaque access token (bca_…), stored by its hash; read by one indexed statement per bearer check. */
export const AccessTokenEntity = defineEntity({
  name: "AccessToken",
  tableName: "access_token",
  properties: {
    hash: p.text().primary(),
    clientId: p.text(),
    organisationId: p.uuid(),
    /** Null for client_credentials (as grantId: no grant). */
    memberId: p.uuid().nullable(),
    grantId: () =>
      p
        .manyToOne(GrantEntity)
        .mapToPk()
        .fieldName("grant_id")
        .nullable()
        .foreignKeyName("access_token_grant_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action"),
    /** The refresh-token family it was issued with (revoked with that family); null without one. */
    family: p.uuid().nullable(),
    scopes: p.json<string[]>(),
    /** RFC 8707: the protected resource it is for (services/shared/protected-resources.ts). */
    audience: p.text().$type<ResourceName>().default("api"),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3).index("access_token_expires_at_index"),
  },
  indexes: [
    // Withdrawing a grant also ends the pair's client_credentials tokens.
    { name: "access_token_pair_index", properties: ["organisationId", "clientId"] },
    // The grant's cascade and a family's revocation: a partial index, of only the tokens that have one.
    {
      name: "access_token_grant_id_index",
      expression: `create index "access_token_grant_id_index" on "auth"."access_token" ("grant_id") where "grant_id" is not null`,
    },
    {
      name: "access_token_family_index",
      expression: `create index "access_token_family_index" on "auth"."access_token" ("family") where "family" is not null`,
    },
  ],
});
