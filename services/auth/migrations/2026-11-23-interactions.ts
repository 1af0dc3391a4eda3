import { Migration } from "@mikro-orm/migrations";

/** The browser flow's state (interactions, member sessions) and the failure rate limits' counters. */
export class InteractionsSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "auth"."interaction" (
      "id" text primary key,
      "kind" text not null,
      "csrf_token" text not null,
      "client_id" text null,
      "parameters" jsonb null,
      "scopes" jsonb not null,
      "member_id" uuid null,
      "organisation_id" uuid null,
      "member_email" text null,
      "created_at" timestamptz(3) not null,
      "expires_at" timestamptz(3) not null
    )`);
    this.addSql(`create index "interaction_expires_at_index" on "auth"."interaction" ("expires_at")`);
    this.addSql(`create table "auth"."session" (
      "id_hash" text primary key,
      "member_id" uuid not null,
      "organisation_id" uuid not null,
      "member_email" text not null,
      "csrf_token" text not null,
      "created_at" timestamptz(3) not null,
      "expires_at" timestamptz(3) not null
    )`);
    this.addSql(`create index "session_expires_at_index" on "auth"."session" ("expires_at")`);
    // rate-limiter-flexible's RateLimiterPostgres table, exactly as the library would make it.
    this.addSql(`create table "auth"."rate_limit" (
      "key" varchar(255) primary key,
      "points" integer not null default 0,
      "expire" bigint null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "auth"."rate_limit"`);
    this.addSql(`drop table if exists "auth"."session"`);
    this.addSql(`drop table if exists "auth"."interaction"`);
  }
}
