import { defineEntity, p } from "@mikro-orm/core";

/**
 * A subscription its target throttled (subscription-pause.ts): nothing is
 * claimed before paused_until; in_flight_cap, when lowered, replaces the
 * configured cap (null again once it grows back to it).
 */
export const SubscriptionPauseEntity = defineEntity({
  name: "SubscriptionPause",
  tableName: "subscription_pause",
  properties: {
    subscriptionId: p.bigint("bigint").primary().autoincrement(false),
    pausedUntil: p.datetime(3).nullable(),
    inFlightCap: p.integer().nullable(),
    /** The last answer that throttled it, e.g. "HTTP 429 with Retry-After". */
    reason: p.text(),
    /** Timeouts in a row (reset by any answer). */
    timeoutRun: p.integer().default(0),
    /** When in_flight_cap was last halved: not again within DELIVERY_TIMEOUT_MS. */
    capHalvedAt: p.datetime(3).nullable(),
    updatedAt: p.datetime(3),
  },
});
