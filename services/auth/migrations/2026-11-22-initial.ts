import { Migration } from "@mikro-orm/migrations";

export class InitialAuthSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create schema if not exists "auth"`);
    this.addSql(`create table "auth"."client" (
      "id" text primary key,
      "name" text not null,
      "redirect_uris" jsonb not null,
      "scopes" jsonb not null,
      "public" boolean not null,
      "owner_organisation_id" uuid null,
      "secret_hash" text null,
      "created_at" timestamptz(3) not null,
      constraint "client_secret_check" check ("public" = ("secret_hash" is null))
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop schema if exists "auth" cascade`);
  }
}
