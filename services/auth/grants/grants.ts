// The GrantStore (grant-store.ts): grants, the codes issued under them, and
// their revocation with the cascade to every token of the pair.
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MikroORM } from "@mikro-orm/postgresql";
import { ClientRegistration, GrantSchema, type Grant } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ClientRegistrationKind } from "../clients/client.entity.js";
import { REGISTRATION } from "../clients/client-message.js";
import { tokenHash } from "../../shared/token-hash.js";
import { ALL_SCOPES } from "../scopes.js";
import { newTokenValue } from "./token-values.js";
import { enqueueGrantRevoked } from "./grant-events.js";
import type { CodeRequest, GrantRevocationReason, GrantStore } from "./grant-store.js";

export interface GrantStoreDeps {
  orm: MikroORM;
  schema: string;
  subjectPrefix: string;
  codeTtlSeconds: number;
  /** After a commit that wrote an event: wake the outbox relay. */
  onEventCommitted: () => void;
}

export function createGrantStore(deps: GrantStoreDeps): GrantStore {
  const { orm, schema } = deps;
  const t = (table: string) => `"${schema}"."${table}"`;
  const events = { schema, subjectPrefix: deps.subjectPrefix };

  return {
    async issueAuthorizationCode(request: CodeRequest): Promise<string> {
      const code = newTokenValue("code");
      await orm.em.fork().transactional(async (em) => {
        // One grant per (organisation, client): created, or its row locked to widen it.
        const [grant]: { id: string; scopes: string[] }[] = await em.execute(
          `insert into ${t("grant")} ("id", "organisation_id", "client_id", "scopes", "created_at", "updated_at")
             values (?, ?, ?, '[]'::jsonb, now(), now())
           on conflict ("organisation_id", "client_id") do update set "updated_at" = now()
           returning "id", "scopes"`,
          [randomUUID(), request.organisationId, request.clientId],
        );
        const scopes = JSON.stringify(ALL_SCOPES.filter((s) => grant.scopes.includes(s) || request.scopes.includes(s)));
        await em.execute(`update ${t("grant")} set "scopes" = ?::jsonb where "id" = ?`, [scopes, grant.id]);
        await em.execute(
          `insert into ${t("authorization_code")}
             ("hash", "grant_id", "client_id", "organisation_id", "member_id", "redirect_uri", "redirect_uri_omitted", "scopes", "resources", "code_challenge", "expires_at")
           values (?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, now() + make_interval(secs => ?))`,
          [
            tokenHash(code),
            grant.id,
            request.clientId,
            request.organisationId,
            request.memberId,
            request.redirectUri,
            request.redirectUriOmitted ?? false,
            JSON.stringify(request.scopes),
            JSON.stringify(request.resources ?? []),
            request.codeChallenge,
            deps.codeTtlSeconds,
          ],
        );
      });
      return code;
    },

    async listGrants(organisationId: string): Promise<Grant[]> {
      type Row = { organisation_id: string; client_id: string; scopes: string[]; created_at: Date; updated_at: Date };
      const rows: (Row & { name: string; registration: ClientRegistrationKind })[] = await orm.em.fork().execute(
        `select g."organisation_id", g."client_id", g."scopes", g."created_at", g."updated_at", c."name", c."registration"
           from ${t("grant")} g join ${t("client")} c on c."id" = g."client_id"
          where g."organisation_id" = ?
          order by g."created_at" desc, g."id" desc`,
        [organisationId],
      );
      return rows.map((r) =>
        create(GrantSchema, {
          organisationId: r.organisation_id,
          clientId: r.client_id,
          scopes: r.scopes,
          createTime: timestampFromDate(new Date(r.created_at)),
          updateTime: timestampFromDate(new Date(r.updated_at)),
          clientName: r.name,
          clientRegistration: REGISTRATION[r.registration] ?? ClientRegistration.OPERATOR,
        }),
      );
    },

    async revokeGrant(organisationId: string, clientId: string, reason: GrantRevocationReason): Promise<boolean> {
      const revoked = await orm.em.fork().transactional(async (em) => {
        // The grant's codes and tokens go with it (on delete cascade); the pair's
        // client_credentials tokens have none.
        const grants: unknown[] = await em.execute(
          `delete from ${t("grant")} where "organisation_id" = ? and "client_id" = ? returning "id"`,
          [organisationId, clientId],
        );
        const tokens: unknown[] = await em.execute(
          `delete from ${t("access_token")} where "organisation_id" = ? and "client_id" = ? returning "hash"`,
          [organisationId, clientId],
        );
        if (grants.length === 0 && tokens.length === 0) return false;
        await enqueueGrantRevoked(em, events, { organisationId, clientId }, reason);
        return true;
      });
      if (revoked) deps.onEventCommitted();
      return revoked;
    },
  };
}
