import { Migration } from "@mikro-orm/migrations";

/**
 * The subscription's delivery state (states/delivery-states.ts) and the
 * timeouts' AIMD (deliveries/attempt-record.ts):
 * subscription_pause.cap_halved_at: when its in-flight cap was last halved
 * (a 503 without Retry-After, a run of timeouts); it is not halved again
 * within DELIVERY_TIMEOUT_MS of that, so the answers to POSTs sent before a
 * halving, recorded in separate batches, halve it once.
 * delivery_attempt ("delivery_id", "attempted_at"): a delivery's attempts, for
 * an ordered subscription's blocked head (its first failed attempt).
 */
export class DeliveryStatesSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "delivery"."subscription_pause" add column "cap_halved_at" timestamptz(3) null`);
    this.addSql(
      `create index "delivery_attempt_delivery_index" on "delivery"."delivery_attempt" ("delivery_id", "attempted_at")`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "delivery"."delivery_attempt_delivery_index"`);
    this.addSql(`alter table "delivery"."subscription_pause" drop column "cap_halved_at"`);
  }
}
