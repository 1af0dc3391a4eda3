import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** One POST of one event to one subscription's target_url. */
export const DeliveryAttemptEntity = defineEntity({
  name: "DeliveryAttempt",
  tableName: "delivery_attempt",
  properties: {
    id: p.uuid().primary(),
    eventId: p.uuid(),
    subscriptionId: p.bigint("number"),
    attempt: p.integer(),
    responseStatus: p.integer().default(0),
    outcome: p.text(),
    error: p.text().default(""),
    durationMs: p.integer().default(0),
    attemptedAt: p.datetime(3),
  },
  // ListDeliveryAttempts: one subscription's, newest first. The migration
  // makes the last two columns "desc"; MikroORM's schema diff does not compare
  // index directions (a btree serves either direction anyway).
  indexes: [{ name: "delivery_attempt_subscription_index", properties: ["subscriptionId", "attemptedAt", "id"] }],
});

export type DeliveryAttempt = InferEntity<typeof DeliveryAttemptEntity>;
