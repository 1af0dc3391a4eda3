// The token endpoint's fast path for its common case: a right
// client_credentials request (RFC 6749 §4.4) answered with ONE SQL statement.
//
// Why it exists: issue 6 sets the token endpoint a floor of 0.5x the peer
// (oidc-provider), with tokens durable in PostgreSQL. The pipeline
// (token-endpoint.ts) reads the client's row and the failure counters, then
// inserts the token: two round trips one after the other, each costing
// about as much CPU in socket writes and wake-ups as the rest of the request
// on a small machine; with them the endpoint measured 0.14-0.24x the peer. Here the insert happens only when
// every rule the pipeline would check holds, so a success costs one round
// trip; and requests arriving while statements are in flight go together in
// the next one (one round trip, one parse and one commit for all of them;
// each token is committed, durable, before it is answered). When the
// statement inserts nothing for a request, the caller runs the pipeline,
// which finds which rule failed, answers its exact error and counts the
// failure: errors and limits behave exactly as without this path.
//
// The statement inserts the access token only if the client
// - exists, is confidential and its secret's SHA-256 matches (RFC 6749
//   §2.3.1; the secret is 256 random bits, so comparing its hash in SQL tells
//   an attacker nothing: clients/client-secret.ts);
// - may use client_credentials and is owned by an organisation (CONTRACT:
//   "only for confidential clients owned by an organisation");
// - was registered with every scope asked for (RFC 6749 §3.3, scope-parameter.ts);
// and none of its failure counters is over its limit: the rows check() reads,
// with check()'s test (rate-limit/failure-limits.ts, storedCounters), so
// that a right secret is refused (by the pipeline: 429) while a limit is
// exceeded, as without this path. Limits that name no stored counters (a
// test's in-memory FailureLimits) leave every request to the pipeline.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../shared/token-hash.js";
import { hashSecret } from "../clients/client-secret.js";
import type { FailureLimits } from "../rate-limit/failure-limits.js";
import { ALL_SCOPES, isScope } from "../scopes.js";
import { tokenAnswer, type TokenTables } from "../grants/issue-tokens.js";
import { newTokenValue } from "../grants/token-values.js";

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

interface Connection {
  query(q: { name?: string; text: string; values: unknown[] }): Promise<{ rows: { hash: string; scopes: string[] }[] }>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Statements in flight at once; requests arriving meanwhile wait for the next one, together. */
const MAX_IN_FLIGHT = 2;
/** Requests in one statement at most. */
const MAX_BATCH = 64;

/**
 * The statement, for the failure counters in one table. Each request is a
 * row of the arrays $1-$4 (numbered by "n"), each of its counters a row of
 * $5-$7; $8 created_at, $9 expires_at, $10 now (epoch ms, as the limiter's
 * get() compares expire).
 */
function statement(schema: string, counterTable: string): string {
  return `with "request" as (
            select * from unnest($1::text[], $2::text[], $3::text[], $4::text[]) with ordinality
              as r("hash", "client_id", "secret_hash", "scopes", "n")),
          "counter" as (
            select * from unnest($5::bigint[], $6::text[], $7::integer[]) as k("n", "key", "limit"))
          insert into ${quote(schema)}."access_token"
            ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "created_at", "expires_at")
          select r."hash", c."id", c."owner_organisation_id", null, null, null, coalesce(r."scopes"::jsonb, c."scopes"), $8, $9
            from "request" r join ${quote(schema)}."client" c on c."id" = r."client_id"
           where not c."public"
             and c."secret_hash" = r."secret_hash"
             and c."grant_types" @> '["client_credentials"]'::jsonb
             and c."owner_organisation_id" is not null
             and (r."scopes" is null or c."scopes" @> r."scopes"::jsonb)
             and not exists (select 1 from "counter" k join ${counterTable} l on l."key" = k."key"
                              where k."n" = r."n" and l."points" >= k."limit" and (l."expire" > $10 or l."expire" is null))
          returning "hash", "scopes"`;
}

/**
 * The scopes asked for, in the server's order (as narrowScope answers them),
 * null for "all the client's", or undefined when the parameter is not plainly
 * valid (the pipeline then answers its error).
 */
function askedScopes(scope: string): string[] | null | undefined {
  if (scope === "") return null;
  const asked = scope.split(" ");
  if (!asked.every(isScope)) return undefined;
  return ALL_SCOPES.filter((s) => asked.includes(s));
}

interface Pending {
  hash: string;
  clientId: string;
  secretHash: string;
  scopes: string | null;
  counters: { key: string; limit: number }[];
  resolve(answer: { scopes: string[]; now: number; expiresAt: number } | undefined): void;
  reject(err: unknown): void;
}

/** Requests waiting for a statement, by the table of their counters. */
interface Batcher {
  queue: Pending[];
  inFlight: number;
  query: { name?: string; text: string };
}

/**
 * Answers a right client_credentials request, or undefined when the request
 * is of another kind or any rule fails (the caller then runs the pipeline).
 */
export function createClientCredentialsFastPath(deps: FastPathDeps): (request: ExchangeTokenRequest) => Promise<ExchangeTokenResponse | undefined> {
  const { tables, limits } = deps;
  const knex = deps.orm.em.getConnection().getKnex();
  const batchers = new Map<string, Batcher>();

  const batcherFor = (counterTable: string): Batcher => {
    let b = batchers.get(counterTable);
    if (!b) {
      const text = statement(tables.schema, counterTable);
      b = { queue: [], inFlight: 0, query: deps.preparedStatements ? { name: `client-credentials-fast-path-${batchers.size}`, text } : { text } };
      batchers.set(counterTable, b);
    }
    return b;
  };

  const send = async (b: Batcher, batch: Pending[]) => {
    const now = Date.now();
    const expiresAt = now + tables.accessTtlSeconds * 1000;
    const values = [
      batch.map((p) => p.hash),
      batch.map((p) => p.clientId),
      batch.map((p) => p.secretHash),
      batch.map((p) => p.scopes),
      batch.flatMap((p, i) => p.counters.map(() => i + 1)),
      batch.flatMap((p) => p.counters.map((c) => c.key)),
      batch.flatMap((p) => p.counters.map((c) => c.limit)),
      new Date(now).toISOString(),
      new Date(expiresAt).toISOString(),
      now,
    ];
    // A connection of the service's pool, without the ORM's per-query work
    // (as the limiter's store: rate-limit/postgres-failure-limits.ts).
    const conn = (await knex.client.acquireConnection()) as Connection;
    try {
      const { rows } = await conn.query({ ...b.query, values });
      const issued = new Map(rows.map((r) => [r.hash, r.scopes]));
      for (const p of batch) {
        const scopes = issued.get(p.hash);
        p.resolve(scopes ? { scopes, now, expiresAt } : undefined);
      }
    } finally {
      await knex.client.releaseConnection(conn);
    }
  };

  const flush = (b: Batcher) => {
    while (b.inFlight < MAX_IN_FLIGHT && b.queue.length) {
      const batch = b.queue.splice(0, MAX_BATCH);
      b.inFlight++;
      send(b, batch)
        .catch((err: unknown) => batch.forEach((p) => p.reject(err)))
        .finally(() => {
          b.inFlight--;
          flush(b);
        });
    }
  };

  return async (request) => {
    const credentials = request.client;
    if (request.grantType !== "client_credentials" || !limits.storedCounters) return undefined;
    if (!credentials?.clientId || !credentials.clientSecret) return undefined;
    if (credentials.method !== "client_secret_basic" && credentials.method !== "client_secret_post") return undefined;
    const scopes = askedScopes(request.scope);
    if (scopes === undefined) return undefined;
    const counters = limits.storedCounters("client", credentials.clientId, request.remoteAddress);
    const counterTables = new Set(counters.map((c) => `${quote(c.schema)}.${quote(c.table)}`));
    // One table of counters per statement (the limiter keeps them in one).
    if (counterTables.size !== 1) return undefined;
    const b = batcherFor([...counterTables][0]!);

    const accessToken = newTokenValue("access");
    const issued = await new Promise<{ scopes: string[]; now: number; expiresAt: number } | undefined>((resolve, reject) => {
      b.queue.push({
        hash: tokenHash(accessToken),
        clientId: credentials.clientId,
        secretHash: hashSecret(credentials.clientSecret),
        scopes: scopes === null ? null : JSON.stringify(scopes),
        counters: counters.map((c) => ({ key: c.key, limit: c.limit })),
        resolve,
        reject,
      });
      flush(b);
    });
    if (!issued) return undefined;
    // RFC 6749 §4.4.3: "A refresh token SHOULD NOT be included."
    return tokenAnswer({ accessToken, refreshToken: "", expiresAt: issued.expiresAt, scopes: issued.scopes }, issued.now);
  };
}
