// Writing new access and refresh tokens (inside the caller's transaction, or
// alone: an access token of client_credentials), and the token endpoint's answer.
import { create } from "@bufbuild/protobuf";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { escapeIdentifier } from "pg";
import { ExchangeTokenResponseSchema, type ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import type { ResourceName } from "../../shared/protected-resources.js";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { tokenHash } from "../../shared/token-hash.js";
import { newTokenValue } from "./token-values.js";

export interface TokenTables {
  schema: string;
  accessTtlSeconds: number;
  refreshTtlSeconds: number;
}

export interface AccessTokenToIssue {
  clientId: string;
  organisationId: string;
  scopes: string[];
  /** RFC 8707: the resource the access token is for (a refresh token keeps it for its successor). */
  audience: ResourceName;
}

interface TokensToIssue extends AccessTokenToIssue {
  memberId: string;
  grantId: string;
  family: string;
  /** With a refresh token carrying the family's originally granted scopes and the resources the request named. */
  refresh?: { scopes: string[]; resources: ResourceName[] };
}

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires (the answer's expires_in counts down to it). */
  expiresAt: number;
  scopes: string[];
}

export async function issueTokens(em: EntityManager, tables: TokenTables, t: TokensToIssue): Promise<IssuedTokens> {
  const accessToken = newTokenValue("access");
  const now = Date.now();
  const expiresAt = now + tables.accessTtlSeconds * 1000;
  await em.execute(
    `insert into "${tables.schema}"."access_token"
       ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "audience", "created_at", "expires_at")
     values (?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)`,
    [
      tokenHash(accessToken),
      t.clientId,
      t.organisationId,
      t.memberId,
      t.grantId,
      t.family,
      JSON.stringify(t.scopes),
      t.audience,
      new Date(now),
      new Date(expiresAt),
    ],
  );
  if (!t.refresh) return { accessToken, refreshToken: "", expiresAt, scopes: t.scopes };
  const refreshToken = newTokenValue("refresh");
  await em.execute(
    `insert into "${tables.schema}"."refresh_token" ("hash", "grant_id", "family", "member_id", "scopes", "audience", "resources", "created_at", "expires_at")
     values (?, ?, ?, ?, ?::jsonb, ?, ?::jsonb, ?, ?)`,
    [
      tokenHash(refreshToken),
      t.grantId,
      t.family,
      t.memberId,
      JSON.stringify(t.refresh.scopes),
      t.audience,
      JSON.stringify(t.refresh.resources),
      new Date(now),
      new Date(now + tables.refreshTtlSeconds * 1000),
    ],
  );
  return { accessToken, refreshToken, expiresAt, scopes: t.scopes };
}

/**
 * Issues access tokens of no grant (client_credentials), each committed
 * before it is answered: requests that arrive while an insert is in flight go
 * together in the next one (statement-batcher.ts).
 */
export function accessTokenIssuer(
  orm: MikroORM,
  tables: TokenTables,
  preparedStatements = false,
): (t: AccessTokenToIssue) => Promise<IssuedTokens> {
  const knex = orm.em.getKnex();
  const text = `insert into ${escapeIdentifier(tables.schema)}."access_token"
      ("hash", "client_id", "organisation_id", "scopes", "audience", "created_at", "expires_at")
    select "hash", "client_id", "organisation_id", "scopes"::jsonb, "audience", ?, ?
      from unnest(?::text[], ?::text[], ?::uuid[], ?::text[], ?::text[]) as t("hash", "client_id", "organisation_id", "scopes", "audience")`;
  const name = preparedStatements ? { name: "access-token-insert" } : {};
  type Row = { hash: string; t: AccessTokenToIssue };
  const write = async (queued: Queued<Row, number>[]) => {
    const now = Date.now();
    const rows = queued.map((q) => q.item);
    await knex
      .raw(text, [
        new Date(now).toISOString(),
        new Date(now + tables.accessTtlSeconds * 1000).toISOString(),
        rows.map((r) => r.hash),
        rows.map((r) => r.t.clientId),
        rows.map((r) => r.t.organisationId),
        rows.map((r) => JSON.stringify(r.t.scopes)),
        rows.map((r) => r.t.audience),
      ])
      .options(name);
    for (const q of queued) q.resolve(now);
  };
  const insert = statementBatcher<Row, number>({ write });
  return async (t) => {
    const accessToken = newTokenValue("access");
    const now = await insert({ hash: tokenHash(accessToken), t });
    return { accessToken, refreshToken: "", expiresAt: now + tables.accessTtlSeconds * 1000, scopes: t.scopes };
  };
}

/**
 * RFC 6749 §5.1 scope: "OPTIONAL, if identical to the scope requested by the
 * client; otherwise, REQUIRED." Always sent.
 */
export function tokenAnswer(issued: IssuedTokens, now = Date.now()): ExchangeTokenResponse {
  return create(ExchangeTokenResponseSchema, {
    accessToken: issued.accessToken,
    tokenType: "Bearer",
    expiresIn: BigInt(Math.max(0, Math.round((issued.expiresAt - now) / 1000))),
    refreshToken: issued.refreshToken,
    scope: issued.scopes.join(" "),
  });
}
