// What the delivery service prunes past DELIVERY_LOG_RETENTION_DAYS: finished
// deliveries (a pending one stays whatever its age), attempts by their own
// time, and event bodies no delivery refers to any more.
import type { PruneTarget } from "../../shared/prune/batch-delete.js";

export function deliveryPruneTargets(schema: string, retentionDays: number): PruneTarget[] {
  const table = (name: string) => `"${schema}"."${name}"`;
  const cutoff = `now() - (? * interval '1 day')`;
  return [
    {
      name: "deliveries",
      table: table("delivery"),
      where: `t."status" <> 'pending' and t."updated_at" < ${cutoff}`,
      params: [retentionDays],
    },
    {
      name: "delivery attempts",
      table: table("delivery_attempt"),
      where: `t."attempted_at" < ${cutoff}`,
      params: [retentionDays],
    },
    {
      name: "delivery events",
      table: table("delivery_event"),
      where: `t."created_at" < ${cutoff} and not exists (select 1 from ${table("delivery")} d where d."event_id" = t."event_id")`,
      params: [retentionDays],
    },
  ];
}
