import { Migration } from "@mikro-orm/migrations";

export class TokensAuthSchema extends Migration {
  override async up(): Promise<void> {
    // Clients: the grant types they may use. Existing clients get the defaults
    // (clients/grant-types.ts).
    this.addSql(`alter table "auth"."client" add column "grant_types" jsonb null`);
    this.addSql(`update "auth"."client" set "grant_types" =
      (case when jsonb_array_length("redirect_uris") > 0 then '["authorization_code","refresh_token"]'::jsonb else '[]'::jsonb end)
      || (case when "owner_organisation_id" is not null and not "public" then '["client_credentials"]'::jsonb else '[]'::jsonb end)`);
    this.addSql(`alter table "auth"."client" alter column "grant_types" set not null`);

    this.addSql(`create table "auth"."grant" (
      "id" uuid primary key,
      "organisation_id" uuid not null,
      "client_id" text not null references "auth"."client" ("id") on delete cascade,
      "scopes" jsonb not null,
      "created_at" timestamptz(3) not null,
      "updated_at" timestamptz(3) not null,
      constraint "grant_organisation_client_unique" unique ("organisation_id", "client_id")
    )`);
    this.addSql(`create index "grant_client_id_index" on "auth"."grant" ("client_id")`);

    this.addSql(`create table "auth"."authorization_code" (
      "hash" text primary key,
      "grant_id" uuid not null references "auth"."grant" ("id") on delete cascade,
      "client_id" text not null,
      "organisation_id" uuid not null,
      "member_id" uuid not null,
      "redirect_uri" text not null,
      "scopes" jsonb not null,
      "code_challenge" text not null,
      "expires_at" timestamptz(3) not null,
      "used_at" timestamptz(3) null,
      "family" uuid null
    )`);
    this.addSql(`create index "authorization_code_grant_id_index" on "auth"."authorization_code" ("grant_id")`);

    this.addSql(`create table "auth"."access_token" (
      "hash" text primary key,
      "client_id" text not null,
      "organisation_id" uuid not null,
      "member_id" uuid null,
      "grant_id" uuid null references "auth"."grant" ("id") on delete cascade,
      "family" uuid null,
      "scopes" jsonb not null,
      "created_at" timestamptz(3) not null,
      "expires_at" timestamptz(3) not null
    )`);
    this.addSql(`create index "access_token_grant_id_index" on "auth"."access_token" ("grant_id")`);
    this.addSql(`create index "access_token_family_index" on "auth"."access_token" ("family")`);
    this.addSql(`create index "access_token_pair_index" on "auth"."access_token" ("organisation_id", "client_id")`);

    this.addSql(`create table "auth"."refresh_token" (
      "hash" text primary key,
      "grant_id" uuid not null references "auth"."grant" ("id") on delete cascade,
      "family" uuid not null,
      "member_id" uuid not null,
      "scopes" jsonb not null,
      "created_at" timestamptz(3) not null,
      "expires_at" timestamptz(3) not null,
      "rotated_at" timestamptz(3) null,
      "retry_answer" bytea null
    )`);
    this.addSql(`create index "refresh_token_grant_id_index" on "auth"."refresh_token" ("grant_id")`);
    this.addSql(`create index "refresh_token_family_index" on "auth"."refresh_token" ("family")`);

    // The auth schema's outbox (services/shared/outbox/): grant.revoked, token.revoked.
    this.addSql(`create table "auth"."outbox" (
      "seq" bigserial not null,
      "id" uuid primary key,
      "subject" text not null,
      "payload" bytea not null,
      "created_at" timestamptz not null default now(),
      "published_at" timestamptz null
    )`);
    this.addSql(`create index "outbox_unsent_index" on "auth"."outbox" ("seq") where "published_at" is null`);
    this.addSql(`create table "auth"."outbox_lease" (
      "name" text primary key,
      "holder" text not null,
      "expires_at" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    for (const table of ["outbox_lease", "outbox", "refresh_token", "access_token", "authorization_code", "grant"]) {
      this.addSql(`drop table if exists "auth"."${table}"`);
    }
    this.addSql(`alter table "auth"."client" drop column "grant_types"`);
  }
}
