// Requests per address that are no failures but cost the server something:
// dynamic client registrations (each success writes a client row) and Client
// ID Metadata Document fetches (each an outgoing request to a URL a stranger
// chose). Counted in the rate_limit table as the failure limits are, so a
// limit holds across every replica.
import type { MikroORM } from "@mikro-orm/postgresql";
import { tooManyRequests, type RequestLimitName } from "../oauth-errors.js";
import { postgresLimiter, waitMs } from "./postgres-failure-limits.js";
import { sha256Base64url } from "../../shared/token-hash.js";

export interface AddressLimit {
  /** Counts one request from this address; past the limit, throws rate_limited. An empty address is not limited. */
  consume(address: string): Promise<void>;
}

export interface AddressLimitOptions {
  /** The key prefix in the table and the refusals metric's label. */
  name: RequestLimitName;
  points: number;
  windowSeconds: number;
  /** What the refusal says happened. */
  description: string;
}

export function createAddressLimit(orm: MikroORM, schema: string, options: AddressLimitOptions): AddressLimit {
  // The failure limits' address limiter clears expired rows of the shared table.
  const { name: keyPrefix, points, windowSeconds: duration } = options;
  const limiter = postgresLimiter(orm, schema, { keyPrefix, points, duration });
  return {
    async consume(address) {
      if (!address) return;
      try {
        await limiter.consume(sha256Base64url(address), 1);
      } catch (err) {
        throw tooManyRequests(options.name, options.description, waitMs(err) / 1000);
      }
    },
  };
}
