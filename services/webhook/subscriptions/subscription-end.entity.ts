import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** Why a subscription ended, as the table stores it. */
const END_REASONS = ["deleted_by_owner", "grant_revoked", "gone"] as const;
export type EndReason = (typeof END_REASONS)[number];

/** A deleted subscription: what it was, why and when it ended (subscription-end.ts); pruned with the delivery log. */
export const SubscriptionEndEntity = defineEntity({
  name: "SubscriptionEnd",
  tableName: "subscription_end",
  properties: {
    /** The subscription's id (identity values are never reused). */
    id: p.bigint("bigint").primary().autoincrement(false),
    organisationId: p.uuid(),
    clientId: p.text(),
    targetUrl: p.text(),
    /** The event type name it had; no check: a record of the past outlives an event type. */
    eventType: p.text(),
    reason: p.enum([...END_REASONS]),
    endedAt: p.datetime(3),
  },
  indexes: [
    // Pruning: the ends older than the retention.
    { name: "subscription_end_ended_at_index", properties: ["endedAt"] },
  ],
});

export type SubscriptionEnd = InferEntity<typeof SubscriptionEndEntity>;
