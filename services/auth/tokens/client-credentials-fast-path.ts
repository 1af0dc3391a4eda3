// The token endpoint's fast path for its common case: a right
// client_credentials request (RFC 6749 §4.4) answered with ONE SQL statement.
//
// Why it exists: issue 6 sets the token endpoint a floor of 0.5x the peer
// (oidc-provider), with tokens durable in PostgreSQL. The pipeline
// (token-endpoint.ts) reads the client's row and the failure counters, then
// inserts the token: two round trips, where each costs as much CPU in socket
// wake-ups as the rest of the request on a small machine; with them the
// endpoint measured 0.14-0.24x the peer. Here the insert happens only when
// every rule the pipeline would check holds, so a success costs one round
// trip. When the statement inserts nothing, the caller runs the pipeline,
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
// and none of the client's failure counters is over its limit: the rows and
// the test FailureLimits.check() reads (rate-limit/failure-limits.ts,
// storedCounters), so a right secret is refused (by the pipeline, 429) while
// a limit is exceeded, as there.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { ExchangeTokenRequest, ExchangeTokenResponse } from "../../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../shared/token-hash.js";
import { hashSecret } from "../clients/client-secret.js";
import type { FailureLimits, StoredCounter } from "../rate-limit/failure-limits.js";
import { ALL_SCOPES, isScope } from "../scopes.js";
import { tokenAnswer, type TokenTables } from "./issue-tokens.js";
import { newTokenValue } from "./token-values.js";

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
  query(q: { name?: string; text: string; values: unknown[] }): Promise<{ rows: { scopes: string[] }[] }>;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The statement, for the given failure counters. */
function statement(schema: string, counters: readonly StoredCounter[]): string {
  // $1 hash, $2 client id, $3 secret hash, $4 asked scopes (jsonb or null),
  // $5 created_at, $6 expires_at, $7 now (epoch ms, as the limiter's get()),
  // then key and limit of each counter.
  const limits = counters
    .map(
      (c, i) => `and not exists (select 1 from ${quote(c.schema)}.${quote(c.table)} r
                         where r."key" = $${8 + 2 * i} and r."points" >= $${9 + 2 * i} and (r."expire" > $7 or r."expire" is null))`,
    )
    .join("\n             ");
  return `insert into ${quote(schema)}."access_token"
            ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "created_at", "expires_at")
          select $1, c."id", c."owner_organisation_id", null, null, null, coalesce($4::jsonb, c."scopes"), $5, $6
            from ${quote(schema)}."client" c
           where c."id" = $2
             and not c."public"
             and c."secret_hash" = $3
             and c."grant_types" @> '["client_credentials"]'::jsonb
             and c."owner_organisation_id" is not null
             and ($4::jsonb is null or c."scopes" @> $4::jsonb)
             ${limits}
          returning "scopes"`;
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

/**
 * Answers a right client_credentials request, or undefined when the request
 * is of another kind or any rule fails (the caller then runs the pipeline).
 */
export function createClientCredentialsFastPath(deps: FastPathDeps): (request: ExchangeTokenRequest) => Promise<ExchangeTokenResponse | undefined> {
  const { tables, limits } = deps;
  const knex = deps.orm.em.getConnection().getKnex();
  /** The statement's text by its counters' tables (one per client, one more per address). */
  const statements = new Map<string, { name?: string; text: string }>();
  return async (request) => {
    const credentials = request.client;
    if (request.grantType !== "client_credentials" || !limits.storedCounters) return undefined;
    if (!credentials?.clientId || !credentials.clientSecret) return undefined;
    if (credentials.method !== "client_secret_basic" && credentials.method !== "client_secret_post") return undefined;
    const scopes = askedScopes(request.scope);
    if (scopes === undefined) return undefined;
    const counters = limits.storedCounters("client", credentials.clientId, request.remoteAddress);
    const shape = counters.map((c) => `${c.schema}.${c.table}`).join(" ");
    let query = statements.get(shape);
    if (!query) {
      const text = statement(tables.schema, counters);
      query = deps.preparedStatements ? { name: `client-credentials-fast-path-${statements.size}`, text } : { text };
      statements.set(shape, query);
    }

    const accessToken = newTokenValue("access");
    const now = Date.now();
    const expiresAt = now + tables.accessTtlSeconds * 1000;
    const values: unknown[] = [
      tokenHash(accessToken),
      credentials.clientId,
      hashSecret(credentials.clientSecret),
      scopes === null ? null : JSON.stringify(scopes),
      new Date(now).toISOString(),
      new Date(expiresAt).toISOString(),
      now,
      ...counters.flatMap((c) => [c.key, c.limit]),
    ];
    // A connection of the service's pool, without the ORM's per-query work
    // (as the limiter's store: rate-limit/postgres-failure-limits.ts).
    const conn = (await knex.client.acquireConnection()) as Connection;
    let rows: { scopes: string[] }[];
    try {
      ({ rows } = await conn.query({ ...query, values }));
    } finally {
      await knex.client.releaseConnection(conn);
    }
    const row = rows[0];
    if (!row) return undefined;
    // RFC 6749 §4.4.3: "A refresh token SHOULD NOT be included."
    return tokenAnswer({ accessToken, refreshToken: "", expiresAt, scopes: row.scopes }, now);
  };
}
