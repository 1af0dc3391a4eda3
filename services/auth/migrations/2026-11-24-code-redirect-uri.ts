import { Migration } from "@mikro-orm/migrations";

/**
 * Authorization codes keep where they went even when the authorization
 * request named no redirect_uri (the client's only one), and whether it named
 * one: RFC 6749 §4.1.3 then lets the token request leave it out, and a token
 * request that sends it must send exactly that one.
 */
export class CodeRedirectUriSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "auth"."authorization_code" add column "redirect_uri_omitted" boolean not null default false`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "auth"."authorization_code" drop column "redirect_uri_omitted"`);
  }
}
