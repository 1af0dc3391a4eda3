import { defineEntity, p } from "@mikro-orm/core";
import type { ResourceName } from "../../shared/protected-resources.js";
import { GrantEntity } from "../grants/grant.entity.js";

/** A rotating refresh token (bcr_…), stored by its hash. */
export const RefreshTokenEntity = defineEntity({
  name: "RefreshToken",
  tableName: "refresh_token",
  properties: {
    hash: p.text().primary(),
    grantId: () =>
      p
        .manyToOne(GrantEntity)
        .mapToPk()
        .fieldName("grant_id")
        .foreignKeyName("refresh_token_grant_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("refresh_token_grant_id_index"),
    /** One chain of rotations from one code: revoked together (RFC 7009). */
    family: p.uuid().index("refresh_token_family_index"),
    memberId: p.uuid(),
    /** The scopes originally granted to the family (a refresh may only narrow them). */
    scopes: p.json<string[]>(),
    /** RFC 8707: the audience of the access token issued with it (a refresh without resource keeps it). */
    audience: p.text().$type<ResourceName>().default("api"),
    /** The resources the authorization request named (empty: the REST API only); a refresh may ask for one of them. */
    resources: p.json<ResourceName[]>().default([]),
    createdAt: p.datetime(3),
    expiresAt: p.datetime(3).index("refresh_token_expires_at_index"),
    /** When it was exchanged for its successor; null while current. */
    rotatedAt: p.datetime(3).nullable(),
    /** The answer of that exchange, AES-256-GCM under a key derived from this token (retry window). */
    retryAnswer: p.blob().nullable(),
  },
});
