// The token endpoint's fast path for its common case: a right
// client_credentials request (RFC 6749 §4.4) answered with ONE SQL statement.
//
// Why it exists: the pipeline (token-endpoint.ts) reads the client's row and
// the failure counters, then inserts the token: two round trips one after
// the other, each costing about as much CPU in socket writes and wake-ups as
// the rest of the request. Here the insert happens only when every rule the
// pipeline would check holds, so a success costs one round trip; and
// requests arriving while statements are in flight go together in the next
// one (one round trip, one parse and one commit for all of them; each token
// is committed, durable, before it is answered). When the statement inserts
// nothing for a request, the caller runs the pipeline, which finds which
// rule failed, answers its exact error and counts the failure: errors and
// limits behave exactly as without this path.
//
// The statement holds no rule of its own: each condition is the SQL form its
// owning module exports beside the rule the pipeline runs, so that the two
// change together (test/oauth/oauth-fast-path-agreement.test.ts sends the same
// requests through both):
// - the secret authenticates a confidential client: client-authentication.ts;
// - the client may use client_credentials: clients/grant-types.ts, and it is
//   confidential and owned by an organisation: grants/client-credentials.ts;
// - every scope asked for was registered: grants/scope-parameter.ts;
// - none of the failure counters check() reads is past its limit: the
//   failure limits' own SQL (rate-limit/failure-limits.ts), so that a right
//   secret is refused (by the pipeline: 429) while a limit is exceeded.
// Limits that offer no SQL (a test's in-memory FailureLimits) leave every
// request to the pipeline, and so does a request naming a resource (RFC 8707;
// resource-indicators.ts): its token's audience is the column's default, the
// REST API, here.
import type { Knex, MikroORM } from "@mikro-orm/postgresql";
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { escapeIdentifier } from "pg";
import { statementBatcher, type Queued } from "../../shared/statement-batcher.js";
import { tokenHash } from "../../shared/token-hash.js";
import { hashSecret } from "../clients/client-secret.js";
import { allowsGrantTypeSql } from "../clients/grant-types.js";
import { mayUseClientCredentialsSql } from "../grants/client-credentials.js";
import { tokenAnswer, type TokenTables } from "../grants/issue-tokens.js";
import { narrowScope, scopeWithinSql } from "../grants/scope-parameter.js";
import { newTokenValue } from "../grants/token-values.js";
import { counterColumns, type FailureLimits, type StoredFailureCheck } from "../rate-limit/failure-limits.js";
import { ALL_SCOPES } from "../scopes.js";
import { presentsSecret, secretAuthenticatesSql } from "./client-authentication.js";

export interface FastPathDeps {
  orm: MikroORM;
  tables: TokenTables;
  limits: FailureLimits;
  /**
   * Name the statement, so that PostgreSQL parses and plans it once per
   * connection. Not on the embedded start: PGlite serves every connection
   * from one session, where a name another connection prepared already exists.
   */
  preparedStatements?: boolean;
}

/**
 * Statements in flight at once; requests arriving meanwhile wait for the next
 * one, together. One: with two, each statement carries half as many tokens,
 * and the extra round trips and commits cost more than the wait saves
 * (docs/benchmark.md). A lone request still goes at once.
 */
const MAX_IN_FLIGHT = 1;
/** Requests in one statement at most. */
const MAX_BATCH = 64;

/**
 * The statement. Each request is a row of the first five arrays (numbered by
 * "n"), each of its counters a row of the next three; then created_at,
 * expires_at, and the failure limits' now.
 */
function statement(schema: string, limits: StoredFailureCheck): string {
  return `with "request" as (
            select * from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[]) with ordinality
              as r("hash", "client_id", "secret_hash", "scopes", "method", "n")),
          "counter" as (
            select * from unnest(?::bigint[], ?::text[], ?::integer[]) as k("n", "key", "limit"))
          insert into ${escapeIdentifier(schema)}."access_token"
            ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "created_at", "expires_at")
          select r."hash", c."id", c."owner_organisation_id", null, null, null, coalesce(r."scopes"::jsonb, c."scopes"), ?, ?
            from "request" r join ${escapeIdentifier(schema)}."client" c on c."id" = r."client_id"
           where ${secretAuthenticatesSql("c", 'r."secret_hash"', 'r."method"')}
             and ${allowsGrantTypeSql("c", "client_credentials")}
             and ${mayUseClientCredentialsSql("c")}
             and (r."scopes" is null or ${scopeWithinSql('c."scopes"', 'r."scopes"::jsonb')})
             and not ${limits.overLimitSql('(select "key", "limit" from "counter" where "counter"."n" = r."n")', "?")}
          returning "hash", "scopes"`;
}

/**
 * The scopes asked for, in the server's order (as narrowScope answers them),
 * null for "all the client's", or undefined when the parameter is not plainly
 * valid (the pipeline then answers its error). Every registered scope is a
 * known one, so narrowing to the client's scopes is narrowing to the known
 * ones (here) and then to the client's (scopeWithinSql in the statement).
 */
function askedScopes(scope: string): string[] | null | undefined {
  if (scope === "") return null;
  try {
    return narrowScope(scope, ALL_SCOPES);
  } catch {
    return undefined;
  }
}

interface Request {
  hash: string;
  clientId: string;
  secretHash: string;
  method: string;
  scopes: string | null;
  counters: { key: string; limit: number }[];
}

type Issued = { scopes: string[]; now: number; expiresAt: number } | undefined;

/**
 * Answers a right client_credentials request, or undefined when the request
 * is of another kind or any rule fails (the caller then runs the pipeline).
 */
export function createClientCredentialsFastPath(deps: FastPathDeps): (request: ExchangeTokenRequest) => Promise<ExchangeTokenResponse | undefined> {
  const { tables } = deps;
  const stored = deps.limits.stored;
  if (!stored) return async () => undefined;
  const knex = deps.orm.em.getKnex();
  const text = statement(tables.schema, stored);
  const name = deps.preparedStatements ? { name: "client-credentials-fast-path" } : {};

  const send = async (queued: Queued<Request, Issued>[]) => {
    const batch = queued.map((q) => q.item);
    const now = Date.now();
    const expiresAt = now + tables.accessTtlSeconds * 1000;
    const values = [
      batch.map((p) => p.hash),
      batch.map((p) => p.clientId),
      batch.map((p) => p.secretHash),
      batch.map((p) => p.scopes),
      batch.map((p) => p.method),
      ...counterColumns(batch),
      new Date(now).toISOString(),
      new Date(expiresAt).toISOString(),
      stored.now(),
    ];
    // Without the ORM's per-query work (knex's raw); knex hands options() to pg, whose name makes it a named prepared statement.
    const { rows } = await knex.raw<{ rows: { hash: string; scopes: string[] }[] }>(text, values as Knex.RawBinding[]).options(name);
    const issued = new Map(rows.map((r) => [r.hash, r.scopes]));
    for (const q of queued) {
      const scopes = issued.get(q.item.hash);
      q.resolve(scopes ? { scopes, now, expiresAt } : undefined);
    }
  };

  const issue = statementBatcher<Request, Issued>({ atOnce: MAX_IN_FLIGHT, max: MAX_BATCH, write: send });

  return async (request) => {
    const credentials = request.client;
    if (request.grantType !== "client_credentials" || !credentials?.clientId || !presentsSecret(credentials)) return undefined;
    if (request.resource.length) return undefined;
    const scopes = askedScopes(request.scope);
    if (scopes === undefined) return undefined;

    const accessToken = newTokenValue("access");
    const issued = await issue({
      hash: tokenHash(accessToken),
      clientId: credentials.clientId,
      secretHash: hashSecret(credentials.clientSecret),
      method: credentials.method,
      scopes: scopes === null ? null : JSON.stringify(scopes),
      counters: stored.counters("client", credentials.clientId, request.remoteAddress),
    });
    if (!issued) return undefined;
    // RFC 6749 §4.4.3: "A refresh token SHOULD NOT be included."
    return tokenAnswer({ accessToken, refreshToken: "", expiresAt: issued.expiresAt, scopes: issued.scopes }, issued.now);
  };
}
