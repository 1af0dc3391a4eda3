import { Migration } from "@mikro-orm/migrations";

/**
 * W3C Trace Context on events: each outbox row keeps the traceparent of the
 * request that wrote it (services/shared/outbox/writer.ts), which the relay
 * sends with the event. Rows from before have none.
 */
export class OutboxTraceContextSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "organisation"."outbox" add column "traceparent" text null`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "organisation"."outbox" drop column "traceparent"`);
  }
}
