import { defineEntity, p } from "@mikro-orm/core";
import type { ResourceName } from "../../shared/protected-resources.js";
import { GrantEntity } from "./grant.entity.js";

/** A single-use authorization code (RFC 6749 §4.1.2), stored by its hash. */
export const AuthorizationCodeEntity = defineEntity({
  name: "AuthorizationCode",
  tableName: "authorization_code",
  properties: {
    hash: p.text().primary(),
    grantId: () =>
      p
        .manyToOne(GrantEntity)
        .mapToPk()
        .fieldName("grant_id")
        .foreignKeyName("authorization_code_grant_id_fkey")
        .deleteRule("cascade")
        .updateRule("no action")
        .index("authorization_code_grant_id_index"),
    clientId: p.text(),
    organisationId: p.uuid(),
    memberId: p.uuid(),
    /** Where the code went (the request's redirect_uri, or the client's only one when it named none). */
    redirectUri: p.text(),
    /** The authorization request named no redirect_uri: the token request need not either. */
    redirectUriOmitted: p.boolean().default(false),
    scopes: p.json<string[]>(),
    /** RFC 8707: the resources the authorization request named (empty: the REST API only). */
    resources: p.json<ResourceName[]>().default([]),
    /** RFC 7636 S256 challenge; "" when the confidential client sent none. */
    codeChallenge: p.text(),
    expiresAt: p.datetime(3).index("authorization_code_expires_at_index"),
    usedAt: p.datetime(3).nullable(),
    /** The token family its exchange issued (revoked with the grant on a replay). */
    family: p.uuid().nullable(),
  },
});
