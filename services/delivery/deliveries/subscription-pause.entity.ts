import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/**
 * A subscription its target asked to wait (429, 502, 503 or 504 with
 * Retry-After): no delivery of it is claimed before paused_until. Written
 * with the attempt that was answered so; a later pause moves it, and one
 * that has passed simply stays behind (nothing clears it).
 */
export const SubscriptionPauseEntity = defineEntity({
  name: "SubscriptionPause",
  tableName: "subscription_pause",
  properties: {
    subscriptionId: p.bigint("bigint").primary().autoincrement(false),
    pausedUntil: p.datetime(3),
    /** The answer that paused it, e.g. "HTTP 429". */
    reason: p.text(),
    updatedAt: p.datetime(3),
  },
});

export type SubscriptionPause = InferEntity<typeof SubscriptionPauseEntity>;
