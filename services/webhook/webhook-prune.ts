// What the webhook service prunes (services/shared/prune/): the recorded ends
// of deleted subscriptions, after DELIVERY_LOG_RETENTION_DAYS, the time the
// delivery service keeps the log they explain.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Logger } from "../shared/logger.js";
import type { PruneTarget } from "../shared/prune/batch-delete.js";
import { startPruning, type PruneSettings } from "../shared/prune/prune-loop.js";

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

export function startWebhookPruning(options: {
  orm: MikroORM;
  schema: string;
  settings: PruneSettings & { DELIVERY_LOG_RETENTION_DAYS: number };
  logger: Logger;
}): { stop(): Promise<void> } {
  return startPruning({
    orm: options.orm,
    targets: () => webhookPruneTargets(options.schema, options.settings.DELIVERY_LOG_RETENTION_DAYS),
    settings: options.settings,
    logger: options.logger.child({ component: "prune" }),
  });
}
