// The delivery schema's tables, as the migrations make them: every value exported here is one (DELIVERY_ENTITIES).
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
  // The claim (delivery-claim.ts) reads the partial ones: rows in flight, pending rows, ordered heads.
  indexes: [
    { name: "delivery_owner_subscription_index", properties: ["organisationId", "clientId", "subscriptionId", "id"] },
    { name: "delivery_updated_at_index", properties: ["updatedAt"] },
    {
      name: "delivery_in_flight_index",
      expression: `create index "delivery_in_flight_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at") where "claim_id" is not null`,
    },
    {
      name: "delivery_pending_index",
      expression: `create index "delivery_pending_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at", "id") where "status" = 'pending'`,
    },
    {
      name: "delivery_ordered_head_index",
      expression: `create index "delivery_ordered_head_index" on "delivery"."delivery" ("subscription_id", "stream_sequence", "id") where "status" = 'pending' and "ordered"`,
    },
  ],
});

export type Delivery = InferEntity<typeof DeliveryEntity>;

/** An event's body, stored once for all its deliveries, with the W3C trace context every POST of it continues. */
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
    traceparent: p.text().nullable(),
    tracestate: p.text().nullable(),
  },
  indexes: [{ name: "delivery_event_created_at_index", properties: ["createdAt"] }],
});

/**
 * One POST of one event to one subscription's target_url (or, attempt 0, an
 * event skipped or cancelled), stored with the subscription's owner; listed
 * per owner, newest first (the migration's "desc" columns: the schema diff
 * ignores directions).
 */
export const DeliveryAttemptEntity = defineEntity({
  name: "DeliveryAttempt",
  tableName: "delivery_attempt",
  properties: {
    id: p.uuid().primary(),
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
  indexes: [
    {
      name: "delivery_attempt_owner_subscription_index",
      properties: ["organisationId", "clientId", "subscriptionId", "attemptedAt", "id"],
    },
    { name: "delivery_attempt_attempted_at_index", properties: ["attemptedAt"] },
    // An ordered subscription's blocked head: its first failed attempt (states/delivery-states.ts).
    { name: "delivery_attempt_delivery_index", properties: ["deliveryId", "attemptedAt"] },
  ],
});

export type DeliveryAttempt = InferEntity<typeof DeliveryAttemptEntity>;

/**
 * A subscription its target throttled (subscription-pause.ts): nothing is
 * claimed before paused_until; in_flight_cap, when lowered, replaces the
 * configured cap (null again once it grows back to it); timeout_run: timeouts
 * in a row; cap_halved_at: not halved again within DELIVERY_TIMEOUT_MS.
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
    timeoutRun: p.integer().default(0),
    capHalvedAt: p.datetime(3).nullable(),
    updatedAt: p.datetime(3),
  },
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
