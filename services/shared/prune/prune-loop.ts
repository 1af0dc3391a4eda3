// The pruning timer of a service: every PRUNE_INTERVAL_SECONDS (jittered),
// delete the rows each target names, in batches. Overlapping runs on several
// replicas are harmless (batches skip locked rows). The first run comes one
// interval after the start, not during it.
import type { MikroORM } from "@mikro-orm/postgresql";
import type { Logger } from "../logger.js";
import { withJitter } from "../loop/backoff.js";
import { PollLoop } from "../loop/poll-loop.js";
import { deleteInBatches, type PruneTarget } from "./batch-delete.js";

const JITTER = 0.2;

/** Starts the timer; stop() lets a batch in hand finish. */
export function startPruning(options: {
  orm: MikroORM;
  /** Called each run: conditions may depend on the time. */
  targets: () => PruneTarget[];
  settings: { PRUNE_INTERVAL_SECONDS: number; PRUNE_BATCH_SIZE: number };
  logger: Logger;
}): { stop(): Promise<void> } {
  const logger = options.logger.child({ component: "prune" });
  const intervalMs = options.settings.PRUNE_INTERVAL_SECONDS * 1000;
  let first = true;
  const loop = new PollLoop({
    round: async () => {
      if (first) {
        first = false;
      } else {
        // The rows deleted per target name.
        const deleted: Record<string, number> = {};
        let total = 0;
        for (const target of options.targets()) {
          const counts = await deleteInBatches(options.orm, target, options.settings.PRUNE_BATCH_SIZE);
          deleted[target.name] = counts.reduce((a, b) => a + b, 0);
          total += deleted[target.name]!;
        }
        if (total > 0) logger.info({ deleted }, "pruned %d expired rows", total);
        else logger.debug("nothing to prune");
      }
      return withJitter(intervalMs, JITTER);
    },
    backoff: { baseMs: Math.min(intervalMs, 5_000), maxMs: intervalMs, jitter: JITTER },
    onError: (err, retryInMs) => logger.warn({ err, retryInMs }, "pruning failed; retrying"),
  });
  loop.start();
  return { stop: () => loop.stop() };
}
