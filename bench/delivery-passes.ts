// One delivery case of the benchmark, as the delivery and growth rows run it
// (delivery-rows.ts, growth-rows.ts): on vacuumed tables (pipeline-vacuum.ts),
// a fixed-rate row RATE_PASSES times, a burst BURST_PASSES times.
//
// A burst is short (500 contacts with 10 subscriptions each: 5,000 deliveries,
// under two seconds), so one pass measured this machine's moment as much as
// the pipeline: the same code made 2,568-3,627 deliveries/s in four bursts of
// one evening. A fixed-rate row's p95 is 9-70 ms, and one 10 s pass of the
// same code moved by ±25 % between a run's first pass and its growth pass, in
// both directions (docs/benchmark.md, "The growth rows"). The row is the pass with the
// median rate (a burst) or the median p95 (a fixed rate); a pass that lost a
// delivery or had a call fail is the row instead, so a loss is never hidden.
//
// A fixed rate ran five passes of 3 s, not three of 6 s (from 2026-11-29):
// its p95 is 5-40 ms here, where a few milliseconds of the machine's moment
// are 20 %, and one pass in a few moves by half (a growth pair at 200/s fell
// 54 %, −16 % and 64 % in one run, every other run's median within ±11 %).
// The median of five passes needs three such passes to move; five of 3 s
// take about as long as three of 6 s with the vacuum and drain of each.
//
// Seven since 2026-11-30: the growth rows' median pair of a fixed rate moved
// by half with five (1,000/s: the pairs −31, −14, 55, 58 and 52 %, the two
// platforms' median passes 30 and 31 ms, and CPU and WAL an event within 1 %);
// the median of seven needs four such pairs. Two more pairs of the three
// fixed rates add about 50 s to a full run.
import type { DeliveryRun, DeliveryTarget } from "./delivery-target.js";
import { vacuumPipeline } from "./pipeline-vacuum.js";
import type { RunCost } from "./run-cost.js";

export const BURST_PASSES = Number(process.env.BENCH_BURST_PASSES ?? 3);
export const RATE_PASSES = Number(process.env.BENCH_RATE_PASSES ?? 7);
/** Seconds of each fixed-rate pass. */
export const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 3);

/** A delivery missing at the receiver, or a CreateContact call that failed. */
export const lostOrFailed = (r: DeliveryRun) => r.failed > 0 || r.arrived < r.events * r.subscriptions;

/** A case's row: its median pass, with every pass's figure and cost (in the order run). */
export type Row = DeliveryRun & { passes: number[]; costs: (RunCost | undefined)[] };

/** The row of a case's passes: the median pass by its figure, or the first that lost or failed. */
function rowOf(runs: DeliveryRun[], burst: boolean): Row {
  const figure = (r: DeliveryRun) => (burst ? r.deliveriesPerSecond : r.p95);
  const sorted = [...runs].sort((a, b) => figure(a) - figure(b));
  const row = runs.find(lostOrFailed) ?? sorted[Math.floor(sorted.length / 2)]!;
  return { ...row, passes: runs.map((r) => Math.round(figure(r) * 10) / 10), costs: runs.map((r) => r.cost) };
}

const passesOf = (args: Parameters<DeliveryTarget["run"]>) => (args[1] === Infinity ? BURST_PASSES : RATE_PASSES);

/** The case `args` of `delivery.run`; `passes`: each pass's deliveries/s (a burst) or p95 ms (a fixed rate), in the order run. */
export async function runCase(delivery: DeliveryTarget, args: Parameters<DeliveryTarget["run"]>): Promise<Row> {
  const runs: DeliveryRun[] = [];
  for (let pass = 0; pass < passesOf(args); pass++) {
    await vacuumPipeline(delivery.databaseUrl);
    runs.push(await delivery.run(...args));
  }
  return rowOf(runs, args[1] === Infinity);
}

/**
 * The case on two targets, their passes taking turns (first one, then the
 * other, then the other way round): the growth rows' platform with its
 * tables grown beside the delivery rows' own, in the same minutes, since this
 * machine's speed moves by half between minutes (growth-rows.ts). The two
 * rows' `passes` are in pairs: the n-th of each ran one beside the other.
 */
export async function runCasePair(
  a: DeliveryTarget,
  b: DeliveryTarget,
  args: Parameters<DeliveryTarget["run"]>,
): Promise<[Row, Row]> {
  const runs: [DeliveryRun[], DeliveryRun[]] = [[], []];
  const targets = [a, b] as const;
  for (let pass = 0; pass < passesOf(args); pass++) {
    for (const i of pass % 2 === 0 ? [0, 1] : [1, 0]) {
      await vacuumPipeline(targets[i]!.databaseUrl);
      runs[i]!.push(await targets[i]!.run(...args));
    }
  }
  const burst = args[1] === Infinity;
  return [rowOf(runs[0], burst), rowOf(runs[1], burst)];
}
