import { Migration } from "@mikro-orm/migrations";

/**
 * A rotated secret keeps signing for WEBHOOK_SECRET_OVERLAP_SECONDS: the
 * secret before the last rotation and until when it signs. Both null when
 * there is none (never rotated, or rotated without an overlap).
 */
export class SecretRotation extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "webhook"."subscription" add column "previous_secret" text null, add column "previous_secret_expires_at" timestamptz(3) null`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(
      `alter table "webhook"."subscription" drop column "previous_secret", drop column "previous_secret_expires_at"`,
    );
  }
}
