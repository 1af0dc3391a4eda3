import { Migration } from "@mikro-orm/migrations";

/**
 * The per-subscription in-flight cap (deliveries/delivery-claim.ts): each
 * claim counts every subscription's rows a worker holds (claim_id set). Only
 * those few rows are in this index, so the count does not read the pending
 * rows that merely wait for a later retry.
 */
export class DeliveryInFlightIndexSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "delivery_in_flight_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at") where "claim_id" is not null`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "delivery"."delivery_in_flight_index"`);
  }
}
