import { Migration } from "@mikro-orm/migrations";

/**
 * The pruning job (prune/auth-prune.ts) finds expired rows by their expiry:
 * with these indexes each batch reads just the rows it deletes, however large
 * the table (sessions and interactions had theirs from the start).
 */
export class ExpiryIndexesSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "access_token_expires_at_index" on "auth"."access_token" ("expires_at")`);
    this.addSql(`create index "refresh_token_expires_at_index" on "auth"."refresh_token" ("expires_at")`);
    this.addSql(`create index "authorization_code_expires_at_index" on "auth"."authorization_code" ("expires_at")`);
    this.addSql(`create index "rate_limit_expire_index" on "auth"."rate_limit" ("expire")`);
  }

  override async down(): Promise<void> {
    for (const index of [
      "rate_limit_expire_index",
      "authorization_code_expires_at_index",
      "refresh_token_expires_at_index",
      "access_token_expires_at_index",
    ]) {
      this.addSql(`drop index if exists "auth"."${index}"`);
    }
  }
}
