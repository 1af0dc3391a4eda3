// One delivery case of the benchmark, as the delivery and growth rows run it
// (delivery-rows.ts, growth-rows.ts): on vacuumed tables (pipeline-vacuum.ts),
// a fixed-rate row once, a burst BURST_PASSES times.
//
// A burst is short (500 contacts with 10 subscriptions each: 5,000 deliveries,
// under two seconds), so one pass measured this machine's moment as much as
// the pipeline: the same code made 2,568-3,627 deliveries/s in four bursts of
// one evening. The row is the pass with the median rate; a pass that lost a
// delivery or had a call fail is the row instead, so a loss is never hidden.
import type { DeliveryRun, DeliveryTarget } from "./delivery-target.js";
import { vacuumPipeline } from "./pipeline-vacuum.js";

export const BURST_PASSES = Number(process.env.BENCH_BURST_PASSES ?? 3);

/** A delivery missing at the receiver, or a CreateContact call that failed. */
export const lostOrFailed = (r: DeliveryRun) => r.failed > 0 || r.arrived < r.events * r.subscriptions;

/** The case `args` of `delivery.run`; `passes`: each pass's deliveries/s (one for a fixed rate). */
export async function runCase(delivery: DeliveryTarget, args: Parameters<DeliveryTarget["run"]>): Promise<DeliveryRun & { passes: number[] }> {
  const burst = args[1] === Infinity;
  const runs: DeliveryRun[] = [];
  for (let pass = 0; pass < (burst ? BURST_PASSES : 1); pass++) {
    await vacuumPipeline(delivery.databaseUrl);
    runs.push(await delivery.run(...args));
  }
  const sorted = [...runs].sort((a, b) => a.deliveriesPerSecond - b.deliveriesPerSecond);
  const row = runs.find(lostOrFailed) ?? sorted[Math.floor(sorted.length / 2)]!;
  return { ...row, passes: runs.map((r) => Math.round(r.deliveriesPerSecond)) };
}
