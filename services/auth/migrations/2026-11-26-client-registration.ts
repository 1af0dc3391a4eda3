import { Migration } from "@mikro-orm/migrations";

/**
 * How each client came to be known: registered by an operator, self-registered
 * (RFC 7591), or described by a Client ID Metadata Document the server fetched
 * (its client_id is the document's https URL; the row is the fetched copy,
 * refreshed after metadata_expires_at).
 */
export class ClientRegistrationSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "auth"."client"
      add column "registration" text not null default 'operator',
      add column "client_uri" text null,
      add column "application_type" text not null default 'web',
      add column "token_endpoint_auth_method" text null,
      add column "metadata_fetched_at" timestamptz(3) null,
      add column "metadata_expires_at" timestamptz(3) null`);
    this.addSql(`create index "client_registration_index" on "auth"."client" ("registration", "created_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "auth"."client_registration_index"`);
    this.addSql(`alter table "auth"."client"
      drop column "registration", drop column "client_uri", drop column "application_type",
      drop column "token_endpoint_auth_method", drop column "metadata_fetched_at", drop column "metadata_expires_at"`);
  }
}
