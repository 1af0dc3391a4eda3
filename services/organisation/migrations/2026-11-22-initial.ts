import { Migration } from "@mikro-orm/migrations";

export class InitialOrganisationSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create schema if not exists "organisation"`);
    this.addSql(`create table "organisation"."organisation" (
      "id" uuid primary key,
      "name" text not null,
      "created_at" timestamptz(3) not null
    )`);
    this.addSql(`create table "organisation"."member" (
      "id" uuid primary key,
      "organisation_id" uuid not null references "organisation"."organisation" ("id") on delete cascade,
      "email" text not null,
      "password_hash" text not null,
      "created_at" timestamptz(3) not null,
      constraint "member_email_unique" unique ("email")
    )`);
    this.addSql(`create index "member_organisation_id_index" on "organisation"."member" ("organisation_id")`);
    this.addSql(`create table "organisation"."contact" (
      "id" uuid primary key,
      "organisation_id" uuid not null references "organisation"."organisation" ("id") on delete cascade,
      "first_name" text not null default '',
      "last_name" text not null default '',
      "email" text not null default '',
      "phone" text not null default '',
      "company" text not null default '',
      "job_title" text not null default '',
      "website" text not null default '',
      "address" text not null default '',
      "notes" text not null default '',
      "created_at" timestamptz(3) not null,
      "updated_at" timestamptz(3) not null
    )`);
    this.addSql(`create index "contact_organisation_id_index" on "organisation"."contact" ("organisation_id")`);
    this.addSql(
      `create index "contact_organisation_newest_index" on "organisation"."contact" ("organisation_id", "created_at" desc, "id" desc)`,
    );
    this.addSql(`create table "organisation"."outbox" (
      "seq" bigserial not null,
      "id" uuid primary key,
      "subject" text not null,
      "payload" bytea not null,
      "created_at" timestamptz not null default now(),
      "published_at" timestamptz null
    )`);
    this.addSql(`create index "outbox_unsent_index" on "organisation"."outbox" ("seq") where "published_at" is null`);
    this.addSql(`create table "organisation"."outbox_lease" (
      "name" text primary key,
      "holder" text not null,
      "expires_at" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop schema if exists "organisation" cascade`);
  }
}
