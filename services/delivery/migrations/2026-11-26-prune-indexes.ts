import { Migration } from "@mikro-orm/migrations";

/**
 * The pruning's batches find old rows by time (the delivery app's prune loop): without
 * these, each batch would scan the whole log. An event's deliveries are found
 * through delivery_event_subscription_unique (event_id leads it).
 */
export class PruneIndexesSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "delivery_updated_at_index" on "delivery"."delivery" ("updated_at")`);
    this.addSql(`create index "delivery_attempt_attempted_at_index" on "delivery"."delivery_attempt" ("attempted_at")`);
    this.addSql(`create index "delivery_event_created_at_index" on "delivery"."delivery_event" ("created_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "delivery"."delivery_updated_at_index"`);
    this.addSql(`drop index "delivery"."delivery_attempt_attempted_at_index"`);
    this.addSql(`drop index "delivery"."delivery_event_created_at_index"`);
  }
}
