import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** One POST of one event to one subscription's target_url (or, attempt 0, an event skipped while it was disabled), stored with the subscription's owner. */
export const DeliveryAttemptEntity = defineEntity({
  name: "DeliveryAttempt",
  tableName: "delivery_attempt",
  properties: {
    id: p.uuid().primary(),
    // The owner (bizcard.webhook.v1.Owner) of the subscription: the log is listed per owner.
    organisationId: p.uuid(),
    clientId: p.text(),
    eventId: p.uuid(),
    subscriptionId: p.bigint("number"),
    attempt: p.integer(),
    responseStatus: p.integer().default(0),
    outcome: p.text(),
    error: p.text().default(""),
    durationMs: p.integer().default(0),
    attemptedAt: p.datetime(3),
    deliveryId: p.bigint("bigint"),
    eventType: p.text(),
    /** When the next attempt was planned after this one; null when none was. */
    nextAttemptAt: p.datetime(3).nullable(),
  },
  // ListDeliveryAttempts, newest first (the migration's "desc" columns: the schema diff ignores directions).
  indexes: [
    {
      name: "delivery_attempt_owner_subscription_index",
      properties: ["organisationId", "clientId", "subscriptionId", "attemptedAt", "id"],
    },
    // The pruning's batches (delivery-prune.ts).
    { name: "delivery_attempt_attempted_at_index", properties: ["attemptedAt"] },
    // An ordered subscription's blocked head: its first failed attempt (states/delivery-states.ts).
    { name: "delivery_attempt_delivery_index", properties: ["deliveryId", "attemptedAt"] },
  ],
});

export type DeliveryAttempt = InferEntity<typeof DeliveryAttemptEntity>;
