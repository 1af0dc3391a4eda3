import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/**
 * A subscription its target throttled, written with the attempt that was
 * answered so. 429, 502, 503 or 504 with Retry-After: no delivery of it is
 * claimed before paused_until (a later pause moves it; one that has passed
 * simply stays behind). 503 without Retry-After: in_flight_cap, its POSTs in
 * flight at once, is halved (at least 1) and grows back by one per success
 * (null again at the configured cap). A run of TIMEOUT_RUN_HALVES_CAP
 * timeouts (timeout_run; any HTTP answer ends a run) halves it as well.
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
    /** Timeouts in a row (reset by any answer): a run of them lowers in_flight_cap, as a 503 does. */
    timeoutRun: p.integer().default(0),
    /** When in_flight_cap was last halved: not again within DELIVERY_TIMEOUT_MS (one wave of answers halves it once). */
    capHalvedAt: p.datetime(3).nullable(),
    updatedAt: p.datetime(3),
  },
});

export type SubscriptionPause = InferEntity<typeof SubscriptionPauseEntity>;
