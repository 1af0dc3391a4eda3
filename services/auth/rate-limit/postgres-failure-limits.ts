// FailureLimits on rate-limiter-flexible's RateLimiterPostgres, in the auth
// schema's rate_limit table, on the service's own pool: on the embedded start
// PGlite serves one connection, and a second pool would wait for it forever
// (so callers consume and refund outside any transaction). A refused attempt
// keeps its point. Known limit: a refund after its window ended starts the
// next window at -1 (one extra attempt there).
import type { MikroORM } from "@mikro-orm/postgresql";
import { RateLimiterPostgres, type RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited } from "../oauth-errors.js";
import type { FailureKind, FailureLimits } from "./failure-limits.js";
import { sha256Base64url } from "../../shared/token-hash.js";
import { escapeIdentifier } from "pg";
import type { Config } from "../../shared/config.js";

export const RATE_LIMIT_TABLE = "rate_limit";
const WINDOW_SECONDS = 60;

/**
 * A limiter on the rate_limit table. Its queries run as unnamed statements:
 * the library names them, and on PGlite's one session a name an earlier
 * connection prepared still exists ("prepared statement ... already exists").
 */
export function postgresLimiter(
  orm: MikroORM,
  schema: string,
  options: { keyPrefix: string; points: number; duration: number; clearExpiredByTimeout?: boolean },
): RateLimiterPostgres {
  const knex = orm.em.getConnection().getKnex();
  type Query = { text: string; values?: unknown[] };
  const storeClient = {
    async query(q: Query) {
      const conn = (await knex.client.acquireConnection()) as { query(q: Query): Promise<unknown> };
      try {
        return await conn.query({ text: q.text, values: q.values });
      } finally {
        await knex.client.releaseConnection(conn);
      }
    },
  };
  // Not one of the library's named store types: it then calls storeClient.query itself.
  const store = { storeClient, storeType: "unnamed-statements", schemaName: schema, tableName: RATE_LIMIT_TABLE };
  return new RateLimiterPostgres({ ...store, tableCreated: true, clearExpiredByTimeout: false, ...options });
}

/** How long until a rejected consume() may pass: the library rejects with an Error when the store failed. */
export function waitMs(rejection: unknown): number {
  if (rejection instanceof Error) throw rejection;
  return (rejection as RateLimiterRes).msBeforeNext;
}

export type FailureLimitSettings = Pick<
  Config,
  "RATE_LIMIT_LOGIN_FAILURES" | "RATE_LIMIT_CLIENT_AUTH_FAILURES" | "RATE_LIMIT_ADDRESS_FAILURES"
>;

/** Keys are hashed: an email may be 320 characters, the library's key column 255. */
const keyOf = (...parts: string[]) => sha256Base64url(parts.join("\u0000"));

export function createPostgresFailureLimits(
  orm: MikroORM,
  schema: string,
  settings: FailureLimitSettings,
): FailureLimits {
  const table = `${escapeIdentifier(schema)}.${escapeIdentifier(RATE_LIMIT_TABLE)}`;
  // Expired rows are overwritten on the next failure; the address limiter also
  // has the library delete old expired rows of the shared table now and then.
  const limiter = (keyPrefix: string, points: number, clearExpiredByTimeout = false) =>
    postgresLimiter(orm, schema, { keyPrefix, points, duration: WINDOW_SECONDS, clearExpiredByTimeout });
  const subjects: Record<FailureKind, RateLimiterPostgres> = {
    login: limiter("login", settings.RATE_LIMIT_LOGIN_FAILURES),
    client: limiter("client", settings.RATE_LIMIT_CLIENT_AUTH_FAILURES),
  };
  const addresses = limiter("address", settings.RATE_LIMIT_ADDRESS_FAILURES, true);
  const byPrefix = new Map([subjects.login, subjects.client, addresses].map((l) => [l.keyPrefix, l]));
  const errorOf = (kind: FailureKind) => (kind === "login" ? "invalid_credentials" : "invalid_client");

  // An empty address (a caller that did not pass one) has no address bucket:
  // one shared by every such caller would lock them all out together.
  const buckets = (kind: FailureKind, subject: string, address: string): [RateLimiterPostgres, string][] => [
    [subjects[kind], keyOf(subject, address)],
    ...(address ? [[addresses, keyOf(address)] as [RateLimiterPostgres, string]] : []),
  ];

  return {
    // A point from every bucket; refused with the longest wait of those now past their limit.
    async consume(kind, subject, address) {
      const settled = await Promise.allSettled(buckets(kind, subject, address).map(([l, key]) => l.consume(key, 1)));
      let wait = 0;
      for (const s of settled) if (s.status === "rejected") wait = Math.max(wait, waitMs(s.reason), 1);
      if (wait > 0) throw rateLimited(errorOf(kind), wait / 1000);
    },
    async refund(kind, subject, address) {
      await Promise.all(buckets(kind, subject, address).map(([l, key]) => l.reward(key, 1)));
    },
    counterKeys: (kind, subject, address) => buckets(kind, subject, address).map(([l, key]) => l.getKey(key)),
    // The library stores "<keyPrefix>:<key>" (getKey) with the points consumed and "expire" in epoch ms.
    countersSql: (keys) =>
      `(select coalesce(json_agg(json_build_object('key', l."key", 'points', l."points", 'expire', l."expire")), '[]')
          from ${keys} k join ${table} l on l."key" = k."key")`,
    // As the library's get(): a row counts while expire > now or it has no
    // expiry; it is over when its points reach its limiter's (named by the key's prefix).
    overLimit(kind, counters) {
      const now = Date.now();
      let wait = 0;
      for (const c of counters) {
        const l = byPrefix.get(c.key.slice(0, c.key.indexOf(":")));
        if (!l || c.points < l.points || (c.expire !== null && c.expire <= now)) continue;
        wait = Math.max(wait, c.expire === null ? 0 : c.expire - now, 1);
      }
      return wait > 0 ? rateLimited(errorOf(kind), wait / 1000) : undefined;
    },
  };
}
