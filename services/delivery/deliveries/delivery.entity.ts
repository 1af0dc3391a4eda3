import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/**
 * One event for one subscription, written by the fan-out, sent by the workers.
 * status: "pending" (due at next_attempt_at; a claim sets claim_id and pushes
 * next_attempt_at a lease ahead), "succeeded", "gave_up", "gone" (410),
 * "cancelled", "skipped" (the subscription was disabled). `once`: a manual
 * retry of a finished delivery, which gives up after one failed attempt.
 */
export const DeliveryEntity = defineEntity({
  name: "Delivery",
  tableName: "delivery",
  properties: {
    id: p.bigint("bigint").primary().autoincrement().generated("by default as identity"),
    eventId: p.uuid(),
    subscriptionId: p.bigint("bigint"),
    organisationId: p.uuid(),
    clientId: p.text(),
    eventType: p.text(),
    status: p.text(),
    attempts: p.integer().default(0),
    nextAttemptAt: p.datetime(3).nullable(),
    claimId: p.uuid().nullable(),
    once: p.boolean().default(false),
    lastResponseStatus: p.integer().default(0),
    lastError: p.text().default(""),
    createdAt: p.datetime(3),
    updatedAt: p.datetime(3),
    /** Its subscription's deliveries go one at a time, in commit order (webhook Subscription.ordered at fan-out). */
    ordered: p.boolean().default(false),
    /** The event's stream sequence (commit order); null on the in-process bus (the id is in commit order there). */
    streamSequence: p.bigint("number").nullable(),
  },
  uniques: [{ name: "delivery_event_subscription_unique", properties: ["eventId", "subscriptionId"] }],
  indexes: [
    { name: "delivery_owner_subscription_index", properties: ["organisationId", "clientId", "subscriptionId", "id"] },
    // The pruning's batches (delivery-prune.ts).
    { name: "delivery_updated_at_index", properties: ["updatedAt"] },
    // The claim's per-subscription in-flight count (delivery-claim.ts): the claimed rows only.
    {
      name: "delivery_in_flight_index",
      expression: `create index "delivery_in_flight_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at") where "claim_id" is not null`,
    },
    // The claim (delivery-claim.ts): the subscriptions with pending deliveries, and each one's oldest due rows.
    {
      name: "delivery_pending_index",
      expression: `create index "delivery_pending_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at", "id") where "status" = 'pending'`,
    },
    // An ordered subscription's head (delivery-claim.ts): its oldest pending delivery.
    {
      name: "delivery_ordered_head_index",
      expression: `create index "delivery_ordered_head_index" on "delivery"."delivery" ("subscription_id", "stream_sequence", "id") where "status" = 'pending' and "ordered"`,
    },
  ],
});

export type Delivery = InferEntity<typeof DeliveryEntity>;

/** An event's body, stored once for all its deliveries (the same bytes on every retry). */
export const DeliveryEventEntity = defineEntity({
  name: "DeliveryEvent",
  tableName: "delivery_event",
  properties: {
    eventId: p.uuid().primary(),
    eventType: p.text(),
    organisationId: p.uuid(),
    body: p.text(),
    streamSequence: p.bigint("number").nullable(),
    createdAt: p.datetime(3),
    /** The W3C traceparent the event arrived with: every POST of it continues that trace. */
    traceparent: p.text().nullable(),
    /** The W3C tracestate it arrived with, sent beside the traceparent. */
    tracestate: p.text().nullable(),
  },
  indexes: [{ name: "delivery_event_created_at_index", properties: ["createdAt"] }],
});

/** The last stream sequence a durable consumer handled (see ConsumerOptions.startAfterSequence). */
export const ConsumerPositionEntity = defineEntity({
  name: "ConsumerPosition",
  tableName: "consumer_position",
  properties: {
    name: p.text().primary(),
    streamSequence: p.bigint("number"),
    updatedAt: p.datetime(3),
  },
});
