import { Migration } from "@mikro-orm/migrations";

/**
 * Ordered delivery (opt in, webhook.subscription.ordered): the fan-out marks
 * an ordered subscription's deliveries ("ordered") and copies their event's
 * stream sequence (commit order; null on the in-process bus, where the
 * delivery id is in commit order). The claim sends only the head of such a
 * subscription: its oldest pending delivery by (stream_sequence, id).
 * subscription_pause.timeout_run: the subscription's timeouts in a row
 * (a run of them lowers its in-flight cap, as a 503 does).
 */
export class DeliveryOrderedSchema extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "delivery"."delivery" add column "ordered" boolean not null default false, add column "stream_sequence" bigint null`,
    );
    this.addSql(
      `create index "delivery_ordered_head_index" on "delivery"."delivery" ("subscription_id", "stream_sequence", "id") where "status" = 'pending' and "ordered"`,
    );
    this.addSql(`alter table "delivery"."subscription_pause" add column "timeout_run" int not null default 0`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "delivery"."subscription_pause" drop column "timeout_run"`);
    this.addSql(`drop index "delivery"."delivery_ordered_head_index"`);
    this.addSql(`alter table "delivery"."delivery" drop column "ordered", drop column "stream_sequence"`);
  }
}
