import { Migration } from "@mikro-orm/migrations";

export class InitialDeliverySchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create schema if not exists "delivery"`);
    this.addSql(`create table "delivery"."delivery_attempt" (
      "id" uuid primary key,
      "event_id" uuid not null,
      "subscription_id" bigint not null,
      "attempt" integer not null,
      "response_status" integer not null default 0,
      "outcome" text not null,
      "error" text not null default '',
      "duration_ms" integer not null default 0,
      "attempted_at" timestamptz(3) not null
    )`);
    this.addSql(
      `create index "delivery_attempt_subscription_index" on "delivery"."delivery_attempt" ("subscription_id", "attempted_at" desc, "id" desc)`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop schema if exists "delivery" cascade`);
  }
}
