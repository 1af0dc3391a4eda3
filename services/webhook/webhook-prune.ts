// What the webhook service prunes (services/shared/prune/): the recorded ends
// of deleted subscriptions, after DELIVERY_LOG_RETENTION_DAYS, the time the
// delivery service keeps the log they explain.
import type { PruneTarget } from "../shared/prune/batch-delete.js";

export function webhookPruneTargets(schema: string, retentionDays: number): PruneTarget[] {
  return [
    {
      name: "subscription ends",
      table: `"${schema}"."subscription_end"`,
      where: `t."ended_at" < now() - (? * interval '1 day')`,
      params: [retentionDays],
    },
  ];
}
