import { Migration } from "@mikro-orm/migrations";

/**
 * Why and when a subscription ended: one row per deleted subscription (its id,
 * as it was), written in the deletion's statement, pruned after
 * DELIVERY_LOG_RETENTION_DAYS with the delivery log it explains.
 */
export class SubscriptionEnd extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "webhook"."subscription_end" (
      "id" bigint not null primary key,
      "organisation_id" uuid not null,
      "client_id" text not null,
      "target_url" text not null,
      "event_type" text not null,
      "reason" text not null,
      "ended_at" timestamptz(3) not null,
      constraint "subscription_end_reason_check" check ("reason" in ('deleted_by_owner', 'grant_revoked', 'gone'))
    )`);
    // Pruning: the ends older than the retention.
    this.addSql(`create index "subscription_end_ended_at_index" on "webhook"."subscription_end" ("ended_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table "webhook"."subscription_end"`);
  }
}
