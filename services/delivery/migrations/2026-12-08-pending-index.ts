import { Migration } from "@mikro-orm/migrations";

/**
 * The claim works per subscription (deliveries/delivery-claim.ts): a loose
 * index scan finds the subscriptions with pending deliveries, and each gives
 * its oldest due rows, both from this index, so a claim's cost does not grow
 * with the queue.
 */
export class DeliveryPendingIndexSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index "delivery_pending_index" on "delivery"."delivery" ("subscription_id", "next_attempt_at", "id") where "status" = 'pending'`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "delivery"."delivery_pending_index"`);
  }
}
