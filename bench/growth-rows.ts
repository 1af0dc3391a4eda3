// The growth rows (issue 16): the OAuth rows with 1,000,000 access tokens
// stored, the delivery rows with 100,000 deliveries stored (growth.ts seeds
// them with SQL) on a second platform, each beside the same row of the first
// platform measured in turns with it, and how much it fell. Floor: no figure
// falls by more than 20%.
import type { DeliveryTarget } from "./delivery-target.js";
import { lostOrFailed, type Row } from "./delivery-passes.js";
import { GROWTH_DELIVERIES, GROWTH_TOKENS, fall } from "./growth.js";
import type { RunCost } from "./run-cost.js";
import { median } from "./stats.js";

export const GROWTH_FLOOR_PERCENT = 20;

export interface GrowthRow {
  name: string;
  figure: string;
  before: number;
  after: number;
  /** Percent (negative: better with the tables grown). */
  fall: number;
  met: boolean;
  /** The delivery rows: each pass's figure, with the tables grown (delivery-passes.ts). */
  passes?: number[];
  /** Each pair's fall (a pass or a round beside its own), percent: its median is `fall`. */
  falls: number[];
}

const num = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });

/**
 * A growth row from paired figures: `before[i]` and `after[i]` were measured
 * one beside the other (an OAuth round, a delivery pass). Its fall is the
 * median of the pairs' falls; its columns, each side's median.
 */
function pairedRow(
  name: string,
  figure: string,
  before: number[],
  after: number[],
  higherIsBetter: boolean,
): GrowthRow {
  const falls = after.map((a, i) => fall(before[i]!, a, higherIsBetter));
  const paired = median(falls);
  return {
    name,
    figure,
    before: median(before),
    after: median(after),
    fall: paired,
    met: paired <= GROWTH_FLOOR_PERCENT,
    falls,
  };
}

export function printGrowth(title: string, seeded: string, rows: GrowthRow[]): void {
  console.log(
    `\n${`${title} (${seeded})`.padEnd(78)} ${"before".padStart(9)} ${"after".padStart(9)} ${"fall".padStart(7)}`,
  );
  for (const r of rows) {
    console.log(
      `${`${r.name}, ${r.figure}`.padEnd(78)} ${num(r.before).padStart(9)} ${num(r.after).padStart(9)} ${`${r.fall.toFixed(0)}%`.padStart(7)}`,
    );
  }
  const worst = rows.reduce((a, b) => (b.fall > a.fall ? b : a));
  console.log(
    `\nfloors, growth (${seeded}): the largest fall ${worst.fall.toFixed(0)}% (${worst.name}, ${worst.figure}) ` +
      `(<= ${GROWTH_FLOOR_PERCENT}%: ${rows.every((r) => r.met) ? "met" : "NOT met"})`,
  );
}

/**
 * The OAuth rows of a second platform whose access_token table holds
 * 1,000,000 tokens (growth.ts seeds it before the rounds): each of its cases
 * takes its turn right after the same case of the rows' platform, every
 * round (oauth-rows.ts). A round's fall is the grown platform's rate against
 * the other's in that round; the row's, the median of the rounds'. Measured
 * minutes apart instead (as until 2026-11-29), even as ratios to the bare
 * row of their rounds, the three rows fell 11-21 % together in one run,
 * `GET /oauth/me` among them, which reads nothing from the database.
 */
export function oauthGrowth(
  seedMs: number,
  pairs: { name: string; before: number[]; after: number[] }[],
): { seedMs: number; rows: GrowthRow[] } {
  const rows = pairs.map(({ name, before, after }) => pairedRow(name, "calls/s", before, after, true));
  printGrowth(
    "OAuth, growth",
    `${num(GROWTH_TOKENS)} access tokens stored, seeded in ${(seedMs / 1000).toFixed(0)} s; in turns, fall: median round`,
    rows,
  );
  return { seedMs, rows };
}

/**
 * The delivery rows' cases on a second platform whose tables hold 100,000
 * deliveries (growth.ts seeds them before its warm-up), each pass taking
 * turns with the same case's pass on the delivery rows' platform
 * (delivery-passes.ts, runCasePair): p95 for the fixed rates, deliveries/s for
 * the bursts. Measured apart, minutes after the rows, the same code's p95s
 * moved by half between passes with nothing seeded (docs/benchmark.md, "The
 * growth rows"); in turns, both sides see the same minutes.
 */
export function deliveryGrowth(
  seedMs: number,
  pairs: { name: string; args: Parameters<DeliveryTarget["run"]>; before: Row; after: Row }[],
): { seedMs: number; rows: GrowthRow[]; costs: GrowthCost[] } {
  const rows = pairs.map(({ name, args, before, after }): GrowthRow => {
    const burst = args[1] === Infinity;
    const grown = {
      ...pairedRow(name, burst ? "deliveries/s" : "p95 ms", before.passes, after.passes, burst),
      passes: after.passes,
    };
    return lostOrFailed(after)
      ? { ...grown, met: false, figure: `${grown.figure}, ${after.events * after.subscriptions - after.arrived} LOST` }
      : grown;
  });
  printGrowth(
    "Delivery, growth",
    `${num(GROWTH_DELIVERIES)} deliveries stored, seeded in ${(seedMs / 1000).toFixed(0)} s; in turns, fall: median pair`,
    rows,
  );
  const costs = pairs.map(({ name, before, after }) => growthCost(name, before.costs, after.costs));
  printCosts(costs);
  return { seedMs, rows, costs };
}

/** What a case's events cost on each platform, the median of its passes (run-cost.ts); no floor. */
export interface GrowthCost {
  name: string;
  /** CPU per event, µs: the platform's processes and PostgreSQL's backends. */
  cpuUs: { before: number; after: number; change: number };
  /** WAL per event, bytes. */
  walBytes: { before: number; after: number; change: number };
}

function growthCost(name: string, before: (RunCost | undefined)[], after: (RunCost | undefined)[]): GrowthCost {
  const side = (costs: (RunCost | undefined)[], figure: (c: RunCost) => number) =>
    median(costs.flatMap((c) => (c ? [figure(c)] : [])));
  const compare = (figure: (c: RunCost) => number) => {
    const [b, a] = [side(before, figure), side(after, figure)];
    return { before: b, after: a, change: (a / b - 1) * 100 };
  };
  return { name, cpuUs: compare((c) => c.platformUs + c.postgresUs), walBytes: compare((c) => c.walBytes) };
}

/**
 * Beside the growth rows, what each event cost on both platforms (no floor).
 * CPU and WAL per event hardly move between passes where a fixed rate's p95
 * moves by a third, so a table that makes the pipeline dearer shows here
 * first. Measured 2026-11-29 13:04 (BENCH_ONLY=delivery): at 1,000 events/s
 * 1,370 → 1,367 µs of CPU (the platform and PostgreSQL) and 4,595 → 4,607
 * bytes of WAL an event, at 500/s 2,747 → 2,740 µs and 4,582 → 4,568 bytes,
 * without and with the 100,000 deliveries; that run's p95 pairs at 1,000/s,
 * and other runs', fell between −50 % and +100 % each.
 */
function printCosts(costs: GrowthCost[]): void {
  const change = (c: { change: number }) => `${c.change >= 0 ? "+" : ""}${c.change.toFixed(0)}%`;
  console.log(`
${"cost per event (median pass; no floor): CPU µs, platform + PostgreSQL / WAL bytes".padEnd(78)} ${"before".padStart(13)} ${"after".padStart(13)} ${"change".padStart(11)}`);
  for (const c of costs) {
    console.log(
      `${c.name.padEnd(78)} ${`${num(c.cpuUs.before)} / ${num(c.walBytes.before)}`.padStart(13)} ${`${num(c.cpuUs.after)} / ${num(c.walBytes.after)}`.padStart(13)} ${`${change(c.cpuUs)} / ${change(c.walBytes)}`.padStart(11)}`,
    );
  }
}
