// The growth rows (issue 16): the OAuth rows with 1,000,000 access tokens
// stored, the delivery rows with 100,000 deliveries stored (growth.ts seeds
// them with SQL), each beside the same row of the same run before, and how
// much it fell. Floor: no figure falls by more than 20%.
import type { DeliveryRun, DeliveryTarget } from "./delivery-target.js";
import { lostOrFailed, runCase } from "./delivery-passes.js";
import { GROWTH_DELIVERIES, GROWTH_TOKENS, fall, seedAccessTokens, seedDeliveries } from "./growth.js";
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
}

const num = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });

function row(name: string, figure: string, before: number, after: number, higherIsBetter: boolean): GrowthRow {
  const f = fall(before, after, higherIsBetter);
  return { name, figure, before, after, fall: f, met: f <= GROWTH_FLOOR_PERCENT };
}

export function printGrowth(title: string, seeded: string, rows: GrowthRow[]): void {
  console.log(`\n${`${title} (${seeded})`.padEnd(78)} ${"before".padStart(9)} ${"after".padStart(9)} ${"fall".padStart(7)}`);
  for (const r of rows) {
    const value = (n: number) => (r.figure === "x bare" ? n.toFixed(3) : num(n));
    console.log(`${`${r.name}, ${r.figure}`.padEnd(78)} ${value(r.before).padStart(9)} ${value(r.after).padStart(9)} ${`${r.fall.toFixed(0)}%`.padStart(7)}`);
  }
  const worst = rows.reduce((a, b) => (b.fall > a.fall ? b : a));
  console.log(
    `\nfloors, growth (${seeded}): the largest fall ${worst.fall.toFixed(0)}% (${worst.name}, ${worst.figure}) ` +
      `(<= ${GROWTH_FLOOR_PERCENT}%: ${rows.every((r) => r.met) ? "met" : "NOT met"})`,
  );
}

interface RateCase {
  name: string;
  run: () => Promise<{ rps: number }>;
}

/**
 * The OAuth cases again, `rounds` rounds each, after 1,000,000 access tokens
 * are stored. Each figure is the case's rate over the bare row's in the same
 * round (median of the rounds), before as after: this machine's speed drifts
 * by a third between minutes (the bare row made 31,000-55,000 calls/s in one
 * afternoon), so two raw rates minutes apart measure the machine as much as
 * the tables.
 */
export async function oauthGrowth(
  databaseUrl: string,
  bare: RateCase,
  cases: RateCase[],
  before: Map<string, number>,
  rounds: number,
): Promise<{ seedMs: number; rows: GrowthRow[] }> {
  const seedMs = await seedAccessTokens(databaseUrl);
  const samples = cases.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    const base = (await bare.run()).rps;
    for (const [i, c] of cases.entries()) samples[i]!.push((await c.run()).rps / base);
  }
  const rows = cases.map((c, i) => row(c.name, "x bare", before.get(c.name)!, median(samples[i]!), true));
  printGrowth("OAuth, growth", `${num(GROWTH_TOKENS)} access tokens stored, seeded in ${(seedMs / 1000).toFixed(0)} s`, rows);
  return { seedMs, rows };
}

/** The delivery rows' cases again after 100,000 deliveries are stored: p95 for the fixed rates, deliveries/s for the bursts. */
export async function deliveryGrowth(
  delivery: DeliveryTarget,
  runs: { name: string; args: Parameters<DeliveryTarget["run"]>; before: DeliveryRun }[],
): Promise<{ seedMs: number; rows: GrowthRow[] }> {
  const seedMs = await seedDeliveries(delivery.databaseUrl);
  const rows: GrowthRow[] = [];
  for (const r of runs) {
    const after = await runCase(delivery, r.args);
    const lost = lostOrFailed(after);
    const burst = r.args[1] === Infinity;
    const grown = burst
      ? row(r.name, "deliveries/s", r.before.deliveriesPerSecond, after.deliveriesPerSecond, true)
      : row(r.name, "p95 ms", r.before.p95, after.p95, false);
    const measured = { ...grown, passes: after.passes };
    rows.push(lost ? { ...measured, met: false, figure: `${grown.figure}, ${after.events * after.subscriptions - after.arrived} LOST` } : measured);
  }
  printGrowth("Delivery, growth", `${num(GROWTH_DELIVERIES)} deliveries stored, seeded in ${(seedMs / 1000).toFixed(0)} s`, rows);
  return { seedMs, rows };
}
