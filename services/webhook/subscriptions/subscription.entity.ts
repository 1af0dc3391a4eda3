import { defineEntity, p, type InferEntity } from "@mikro-orm/core";

/** One REST Hooks subscription of the pair (organisation, client application). */
export const SubscriptionEntity = defineEntity({
  name: "Subscription",
  tableName: "subscription",
  properties: {
    /** bigint identity; int64 on the wire. */
    id: p.bigint("bigint").primary().autoincrement(),
    organisationId: p.uuid(),
    clientId: p.text(),
    /** Normalised by checkTargetUrl. */
    targetUrl: p.text(),
    /** "contact.created" | "contact.updated", see event-types.ts. */
    eventType: p.text(),
    /** "whsec_" + base64 of 32 random bytes (Standard Webhooks signing secret). */
    secret: p.text().hidden(),
    createdAt: p.datetime(3).onCreate(() => new Date()),
    updatedAt: p.datetime(3).onCreate(() => new Date()),
  },
  uniques: [
    { name: "subscription_pair_target_event_unique", properties: ["organisationId", "clientId", "targetUrl", "eventType"] },
  ],
  indexes: [{ name: "subscription_organisation_event_index", properties: ["organisationId", "eventType"] }],
});

export type Subscription = InferEntity<typeof SubscriptionEntity>;
