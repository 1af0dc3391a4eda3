import { Migration } from "@mikro-orm/migrations";

/**
 * W3C Trace Context on events, its second header: each outbox row keeps the
 * tracestate of the request that wrote it too, which the relay sends beside
 * the traceparent. Rows from before have none.
 */
export class OutboxTracestateSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "auth"."outbox" add column "tracestate" text null`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "auth"."outbox" drop column "tracestate"`);
  }
}
