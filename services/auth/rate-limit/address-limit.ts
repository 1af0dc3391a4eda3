// Requests per address that are no failures but cost the server something:
// dynamic client registrations (OAUTH_REGISTRATION_LIMIT an hour; each
// success writes a client row) and Client ID Metadata Document fetches
// (OAUTH_CLIENT_METADATA_FETCH_LIMIT a minute; each one is an outgoing HTTPS
// request to a URL a stranger chose). rate-limiter-flexible's
// RateLimiterPostgres on the auth schema's rate_limit table, as the failure
// limits (postgres-failure-limits.ts), so a limit holds across every replica.
import type { MikroORM } from "@mikro-orm/postgresql";
import { RateLimiterPostgres, type RateLimiterRes } from "rate-limiter-flexible";
import { tooManyRequests, type RequestLimitName } from "../oauth-errors.js";
import { RATE_LIMIT_TABLE, unnamedStatements } from "./postgres-failure-limits.js";
import { sha256Base64url } from "../../shared/token-hash.js";

export interface AddressLimit {
  /**
   * Counts one request from this address, atomically; throws
   * RESOURCE_EXHAUSTED (error rate_limited, retry_after_seconds, the
   * limit's description) past the limit. An empty address (a caller that
   * passed none) is not limited.
   */
  consume(address: string): Promise<void>;
}

export interface AddressLimitOptions {
  /** The limit's name: the key prefix in the table and the refusals metric's label. */
  name: RequestLimitName;
  points: number;
  windowSeconds: number;
  /** What the refusal says happened. */
  description: string;
}

export function createAddressLimit(orm: MikroORM, schema: string, options: AddressLimitOptions): AddressLimit {
  const limiter = new RateLimiterPostgres({
    storeClient: unnamedStatements(orm),
    storeType: "unnamed-statements",
    schemaName: schema,
    tableName: RATE_LIMIT_TABLE,
    tableCreated: true,
    keyPrefix: options.name,
    points: options.points,
    duration: options.windowSeconds,
    // The failure limits' address limiter clears expired rows of the shared table.
    clearExpiredByTimeout: false,
  });
  return {
    async consume(address) {
      if (!address) return;
      const key = sha256Base64url(address);
      try {
        await limiter.consume(key, 1);
      } catch (err) {
        // The library rejects with a RateLimiterRes when over, with an Error when the store failed.
        if (err instanceof Error) throw err;
        const wait = (err as RateLimiterRes).msBeforeNext / 1000;
        throw tooManyRequests(options.name, options.description, wait);
      }
    },
  };
}
