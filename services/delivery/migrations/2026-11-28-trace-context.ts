import { Migration } from "@mikro-orm/migrations";

/**
 * W3C Trace Context on webhooks: the traceparent an event arrived with (that
 * of the request that made it), once per event; every POST of the event
 * continues that trace. Events from before have none (their POSTs start one).
 */
export class DeliveryTraceContextSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "delivery"."delivery_event" add column "traceparent" text null`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "delivery"."delivery_event" drop column "traceparent"`);
  }
}
