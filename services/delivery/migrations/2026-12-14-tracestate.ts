import { Migration } from "@mikro-orm/migrations";

/**
 * W3C Trace Context on webhooks, its second header: the tracestate an event
 * arrived with, once per event; every POST of the event sends it beside its
 * traceparent. Events from before have none.
 */
export class DeliveryTracestateSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "delivery"."delivery_event" add column "tracestate" text null`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "delivery"."delivery_event" drop column "tracestate"`);
  }
}
