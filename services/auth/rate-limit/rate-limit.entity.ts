import { defineEntity, p } from "@mikro-orm/core";

/**
 * The counters of rate-limiter-flexible's RateLimiterPostgres, in the shape
 * the library expects (its _getCreateTableStmt); created by our migration,
 * never by the library (tableCreated: true).
 */
export const RateLimitEntity = defineEntity({
  name: "RateLimit",
  tableName: "rate_limit",
  properties: {
    key: p.string().length(255).primary(),
    points: p.integer().default(0),
    /** Epoch milliseconds. */
    expire: p.bigint().nullable().index("rate_limit_expire_index"),
  },
});
