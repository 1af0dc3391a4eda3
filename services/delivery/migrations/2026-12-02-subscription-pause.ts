import { Migration } from "@mikro-orm/migrations";

/**
 * Throttling by the target (deliveries/subscription-pause.ts): a 429, 502,
 * 503 or 504 answer with Retry-After pauses the whole subscription until then
 * (paused_until); a 503 without halves its in-flight cap (in_flight_cap),
 * which grows back by one per success (null: the configured cap). One row
 * per subscription that was ever throttled; the claim reads both.
 */
export class DeliverySubscriptionPauseSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "delivery"."subscription_pause" (
      "subscription_id" bigint primary key,
      "paused_until" timestamptz(3) null,
      "in_flight_cap" int null,
      "reason" text not null,
      "updated_at" timestamptz(3) not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table "delivery"."subscription_pause"`);
  }
}
