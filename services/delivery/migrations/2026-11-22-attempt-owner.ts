import { Migration } from "@mikro-orm/migrations";

/**
 * Every attempt carries the owner of its subscription (organisation, client
 * application), so the delivery log is listed per owner and never by a bare
 * subscription id.
 *
 * No release wrote attempts before this migration (delivery was not built), so
 * the table is empty: the columns are NOT NULL without a default, and a table
 * that held ownerless rows after all makes this migration fail loudly instead
 * of guessing whose they are.
 */
export class DeliveryAttemptOwner extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "delivery"."delivery_attempt" add column "organisation_id" uuid not null, add column "client_id" text not null`,
    );
    // "This owner's subscription's attempts, newest first": equality on the first
    // three columns, then (attempted_at, id) read backwards. PostgreSQL 11.4
    // "Indexes and ORDER BY": "an index stored in ascending order with nulls first
    // can satisfy either ORDER BY x ASC NULLS FIRST or ORDER BY x DESC NULLS LAST
    // depending on which direction it is scanned in" (the columns are NOT NULL).
    this.addSql(`drop index "delivery"."delivery_attempt_subscription_index"`);
    this.addSql(
      `create index "delivery_attempt_owner_subscription_index" on "delivery"."delivery_attempt" ("organisation_id", "client_id", "subscription_id", "attempted_at", "id")`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "delivery"."delivery_attempt_owner_subscription_index"`);
    this.addSql(
      `create index "delivery_attempt_subscription_index" on "delivery"."delivery_attempt" ("subscription_id", "attempted_at" desc, "id" desc)`,
    );
    this.addSql(`alter table "delivery"."delivery_attempt" drop column "organisation_id", drop column "client_id"`);
  }
}
