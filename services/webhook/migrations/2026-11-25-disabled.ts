import { Migration } from "@mikro-orm/migrations";

/**
 * A subscription whose every delivery attempt failed for a configured period
 * is disabled: when, and why. Both null while enabled.
 */
export class SubscriptionDisabled extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "webhook"."subscription" add column "disabled_at" timestamptz(3) null, add column "disabled_reason" text null`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook"."subscription" drop column "disabled_at", drop column "disabled_reason"`);
  }
}
