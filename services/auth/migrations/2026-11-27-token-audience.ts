import { Migration } from "@mikro-orm/migrations";

/**
 * RFC 8707 resource indicators: the protected resource each token is for (its
 * audience), by name ('api' the REST API, 'mcp' the MCP endpoint; the
 * identifier URL follows from PUBLIC_URL), and the resources an authorization
 * request named (its code and its refresh-token family may only ask for these).
 * Rows from before keep the REST API, as every token was for it.
 */
export class TokenAudienceSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "auth"."access_token" add column "audience" text not null default 'api'`);
    this.addSql(`alter table "auth"."refresh_token"
      add column "audience" text not null default 'api',
      add column "resources" jsonb not null default '[]'`);
    this.addSql(`alter table "auth"."authorization_code" add column "resources" jsonb not null default '[]'`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "auth"."authorization_code" drop column "resources"`);
    this.addSql(`alter table "auth"."refresh_token" drop column "audience", drop column "resources"`);
    this.addSql(`alter table "auth"."access_token" drop column "audience"`);
  }
}
