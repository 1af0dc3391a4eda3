// Dynamic client registrations per address (OAUTH_REGISTRATION_LIMIT an
// hour): rate-limiter-flexible's RateLimiterPostgres on the auth schema's
// rate_limit table, as the failure limits (postgres-failure-limits.ts), so the
// limit holds across every replica. Every registration attempt counts, a
// refused one too: the endpoint is open to anyone, and each success writes a
// client row.
import { createHash } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { RateLimiterPostgres, type RateLimiterRes } from "rate-limiter-flexible";
import { tooManyRequests } from "../oauth-errors.js";
import { RATE_LIMIT_TABLE, unnamedStatements } from "./postgres-failure-limits.js";

const WINDOW_SECONDS = 3600;

export interface RegistrationLimit {
  /**
   * Counts one registration from this address, atomically; throws
   * RESOURCE_EXHAUSTED (error rate_limited, retry_after_seconds) past the
   * limit. An empty address (a caller that passed none) is not limited.
   */
  consume(address: string): Promise<void>;
}

export function createRegistrationLimit(orm: MikroORM, schema: string, perHour: number): RegistrationLimit {
  const limiter = new RateLimiterPostgres({
    storeClient: unnamedStatements(orm),
    storeType: "unnamed-statements",
    schemaName: schema,
    tableName: RATE_LIMIT_TABLE,
    tableCreated: true,
    keyPrefix: "registration",
    points: perHour,
    duration: WINDOW_SECONDS,
    // The failure limits' address limiter clears expired rows of the shared table.
    clearExpiredByTimeout: false,
  });
  return {
    async consume(address) {
      if (!address) return;
      const key = createHash("sha256").update(address, "utf8").digest("base64url");
      try {
        await limiter.consume(key, 1);
      } catch (err) {
        // The library rejects with a RateLimiterRes when over, with an Error when the store failed.
        if (err instanceof Error) throw err;
        const wait = (err as RateLimiterRes).msBeforeNext / 1000;
        throw tooManyRequests("registration", "too many client registrations from this address; try again later", wait);
      }
    },
  };
}
