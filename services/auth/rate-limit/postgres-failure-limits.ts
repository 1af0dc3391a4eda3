// FailureLimits on rate-limiter-flexible's RateLimiterPostgres, counting in
// the auth schema's "rate_limit" table (the library's shape, made by the
// schema's migrations), on connections of the service's own MikroORM pool:
// on the embedded start PGlite serves one connection, and a second pool would
// wait for it forever. For the same reason, callers consume and refund outside
// any transaction. Fixed windows of one minute, limits from the
// RATE_LIMIT_*_FAILURES settings; a refused attempt keeps its point.
// Known limit: a refund landing after its window ended starts the next window
// at -1 (one extra attempt there).
import type { MikroORM } from "@mikro-orm/postgresql";
import { RateLimiterPostgres, type RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited } from "../oauth-errors.js";
import type { FailureKind, FailureLimits } from "./failure-limits.js";
import { sha256Base64url } from "../../shared/token-hash.js";
import { escapeIdentifier } from "pg";

/**
 * The library's queries on a connection of the service's pool, as unnamed
 * statements. The library names its prepared statements; on the embedded
 * start PGlite serves every connection from one backend session, where a
 * statement prepared by an earlier connection (the pool's, replaced after its
 * idle timeout, or a second instance's) still exists, and preparing it again
 * fails ("prepared statement ... already exists").
 */
export function unnamedStatements(orm: MikroORM) {
  const knex = orm.em.getConnection().getKnex();
  return {
    async query(q: { text: string; values?: unknown[] }) {
      const conn = (await knex.client.acquireConnection()) as {
        query(q: { text: string; values?: unknown[] }): Promise<unknown>;
      };
      try {
        return await conn.query({ text: q.text, values: q.values });
      } finally {
        await knex.client.releaseConnection(conn);
      }
    },
  };
}

export const RATE_LIMIT_TABLE = "rate_limit";
const WINDOW_SECONDS = 60;

export interface FailureLimitSettings {
  RATE_LIMIT_LOGIN_FAILURES: number;
  RATE_LIMIT_CLIENT_AUTH_FAILURES: number;
  RATE_LIMIT_ADDRESS_FAILURES: number;
}

/** Keys are hashed: an email may be 320 characters, the library's key column 255. */
const keyOf = (...parts: string[]) => sha256Base64url(parts.join("\u0000"));

export function createPostgresFailureLimits(
  orm: MikroORM,
  schema: string,
  settings: FailureLimitSettings,
): FailureLimits {
  const store = unnamedStatements(orm);
  const table = `${escapeIdentifier(schema)}.${escapeIdentifier(RATE_LIMIT_TABLE)}`;
  const limiter = (keyPrefix: string, points: number, clearExpiredByTimeout = false) =>
    new RateLimiterPostgres({
      storeClient: store,
      // Not one of the library's named types: it then calls store.query itself.
      storeType: "unnamed-statements",
      schemaName: schema,
      tableName: RATE_LIMIT_TABLE,
      tableCreated: true,
      keyPrefix,
      points,
      duration: WINDOW_SECONDS,
      // Expired rows are overwritten on the next failure; one of the three
      // limiters (they share the table) also has the library delete rows
      // expired an hour ago, every five minutes (an unref'd timer).
      clearExpiredByTimeout,
    });
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

  /** Takes a point from every bucket; the longest wait of those now past their limit, or 0. */
  const take = async (kind: FailureKind, subject: string, address: string): Promise<number> => {
    const settled = await Promise.allSettled(buckets(kind, subject, address).map(([l, key]) => l.consume(key, 1)));
    let waitMs = 0;
    for (const s of settled) {
      if (s.status === "fulfilled") continue;
      // The library rejects with a RateLimiterRes when over, with an Error when the store failed.
      if (s.reason instanceof Error) throw s.reason;
      waitMs = Math.max(waitMs, (s.reason as RateLimiterRes).msBeforeNext, 1);
    }
    return waitMs;
  };

  return {
    async consume(kind, subject, address) {
      const waitMs = await take(kind, subject, address);
      if (waitMs > 0) throw rateLimited(errorOf(kind), waitMs / 1000);
    },
    async refund(kind, subject, address) {
      await Promise.all(buckets(kind, subject, address).map(([l, key]) => l.reward(key, 1)));
    },
    counterKeys: (kind, subject, address) => buckets(kind, subject, address).map(([l, key]) => l.getKey(key)),
    // The library stores "<keyPrefix>:<key>" (getKey) with the points
    // consumed and "expire" in epoch ms.
    countersSql: (keys) =>
      `(select coalesce(json_agg(json_build_object('key', l."key", 'points', l."points", 'expire', l."expire")), '[]')
          from ${keys} k join ${table} l on l."key" = k."key")`,
    // As the library's get(): a row counts while expire > now or it has no
    // expiry; it is over when its points reach its limiter's (named by the key's prefix).
    overLimit(kind, counters) {
      const now = Date.now();
      let waitMs = 0;
      for (const c of counters) {
        const l = byPrefix.get(c.key.slice(0, c.key.indexOf(":")));
        if (!l || c.points < l.points || (c.expire !== null && c.expire <= now)) continue;
        waitMs = Math.max(waitMs, c.expire === null ? 0 : c.expire - now, 1);
      }
      return waitMs > 0 ? rateLimited(errorOf(kind), waitMs / 1000) : undefined;
    },
  };
}
