import { Migration } from "@mikro-orm/migrations";

/**
 * Throttling by the target: a 429, 502, 503 or 504 answer with Retry-After
 * pauses the whole subscription until then (deliveries/subscription-pause.ts).
 * One row per subscription that was ever paused; the claim passes over a
 * subscription whose paused_until is still ahead.
 */
export class DeliverySubscriptionPauseSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "delivery"."subscription_pause" (
      "subscription_id" bigint primary key,
      "paused_until" timestamptz(3) not null,
      "reason" text not null,
      "updated_at" timestamptz(3) not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table "delivery"."subscription_pause"`);
  }
}
