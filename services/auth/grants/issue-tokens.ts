// Writing new access and refresh tokens (inside the caller's transaction, or
// alone: an access token of client_credentials), and the answer of the token
// endpoint (RFC 6749 §5.1).
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

export interface TokensToIssue {
  clientId: string;
  organisationId: string;
  memberId: string | null;
  grantId: string | null;
  /** The refresh-token family; null for client_credentials (no refresh token). */
  family: string | null;
  /** The access token's scopes. */
  scopes: string[];
  /** RFC 8707: the resource the access token is for (the refresh token keeps it for its successor). */
  audience: ResourceName;
  /**
   * With a refresh token carrying these (the family's originally granted)
   * scopes and the resources the authorization request named.
   */
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
  let refreshToken = "";
  if (t.refresh && t.grantId && t.family && t.memberId) {
    refreshToken = newTokenValue("refresh");
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
  }
  return { accessToken, refreshToken, expiresAt, scopes: t.scopes };
}

export type AccessTokenToIssue = Omit<TokensToIssue, "memberId" | "grantId" | "family" | "refresh">;

/**
 * Issues access tokens that belong to no grant (client_credentials), each
 * committed before it is answered: the tokens of requests that arrive while
 * an insert is in flight go together in the next one (statement-batcher.ts),
 * one round trip and one commit for all of them.
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
 * RFC 6749 §5.1: access_token, token_type, expires_in, refresh_token (when
 * issued) and scope ("OPTIONAL, if identical to the scope requested by the
 * client; otherwise, REQUIRED": always sent, space-separated).
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
