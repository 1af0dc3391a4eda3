import { Migration } from "@mikro-orm/migrations";

/** Ordered delivery, opt in: the subscription's deliveries go one at a time, in commit order. */
export class SubscriptionOrdered extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "webhook"."subscription" add column "ordered" boolean not null default false`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook"."subscription" drop column "ordered"`);
  }
}
