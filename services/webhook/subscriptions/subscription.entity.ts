import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { EVENT_TYPE_NAMES } from "../../shared/event-types.js";
import { TARGET_URL_MAX_LENGTH } from "./target-url.js";

/** One REST Hooks subscription of the pair (organisation, client application). */
export const SubscriptionEntity = defineEntity({
  name: "Subscription",
  tableName: "subscription",
  properties: {
    id: p.bigint("bigint").primary().autoincrement().generated("by default as identity"),
    organisationId: p.uuid(),
    clientId: p.text(),
    /** Normalised by checkTargetUrl. */
    targetUrl: p.text(),
    /** An event type name (shared/event-types.ts); a text column with the check "subscription_event_type_check". */
    eventType: p.enum([...EVENT_TYPE_NAMES]),
    /** The Standard Webhooks signing secret, sealed (secret-box.ts), or clear until `bizcard secrets reencrypt`. */
    secret: p.text().hidden(),
    /**
     * The secret before the last rotation, stored as `secret` is: it signs
     * too until previousSecretExpiresAt; null when none does.
     */
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime(3).nullable(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    updatedAt: p.datetime(3).onCreate(() => new Date()),
    /**
     * Set while disabled by the delivery service (every attempt failed for
     * WEBHOOK_DISABLE_AFTER_FAILING_SECONDS); ListSubscribers skips it.
     */
    disabledAt: p.datetime(3).nullable(),
    /** Why, for the client's developer; null while enabled. */
    disabledReason: p.text().nullable(),
    /** Ordered delivery (opt in): one at a time, in the order the events committed. */
    ordered: p.boolean().default(false),
  },
  uniques: [
    {
      name: "subscription_pair_target_event_unique",
      properties: ["organisationId", "clientId", "targetUrl", "eventType"],
    },
  ],
  indexes: [
    // ListSubscribers: one organisation's subscribers of one event type, every client.
    { name: "subscription_organisation_event_index", properties: ["organisationId", "eventType"] },
    // ListSubscriptions: one pair's, newest first (the migration makes
    // "id" desc; the diff does not compare directions).
    { name: "subscription_pair_newest_index", properties: ["organisationId", "clientId", "id"] },
  ],
  checks: [
    {
      name: "subscription_target_url_length_check",
      expression: `char_length("target_url") <= ${TARGET_URL_MAX_LENGTH}`,
    },
  ],
});

export type Subscription = InferEntity<typeof SubscriptionEntity>;
