import { Migration } from "@mikro-orm/migrations";

/**
 * The delivery table is a queue: the share of its rows that are pending
 * swings from none (when an ANALYZE runs between bursts) to most of a
 * burst's. Planned on statistics that saw no pending row, the hand-on's
 * next rows and the in-flight counts (hand-on.ts, delivery-claim.ts) took
 * the broad ("status", …) indexes, estimated at one row either way, and
 * read every pending row of every subscription for each subscription:
 * bursts after the first ran at half the rate (auto_explain showed
 * 7,000-9,000 rows removed by filter per loop). The partial
 * indexes (pending, in flight, ordered head) serve every query on pending
 * rows; the broad ones served none the partial ones cannot, so they go.
 */
export class DeliveryQueueIndexesSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`drop index if exists "delivery"."delivery_due_index"`);
    this.addSql(`drop index if exists "delivery"."delivery_status_index"`);
  }

  override async down(): Promise<void> {
    this.addSql(
      `create index if not exists "delivery_due_index" on "delivery"."delivery" ("status", "next_attempt_at")`,
    );
    this.addSql(`create index if not exists "delivery_status_index" on "delivery"."delivery" ("status", "id")`);
  }
}
