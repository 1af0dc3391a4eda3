// The delivery group of the benchmark (BENCH_ONLY=delivery): the rows run
// against one platform (delivery-target.ts), printed with their floors, and
// returned for the results file (without the per-delivery samples).
import type { DeliveryRun, DeliveryTarget } from "./delivery-target.js";
import {
  BURST_PASSES,
  RATE_PASSES,
  RATE_SECONDS,
  lostOrFailed,
  runCase,
  runCasePair,
  type Row,
} from "./delivery-passes.js";
import { seedDeliveries } from "./growth.js";
import { deliveryGrowth } from "./growth-rows.js";
import { BASELINE_P95_MS, NOISY_FLOOR, noisyNeighbour } from "./noisy-neighbour.js";

/** The organisations the 500 and 1,000 events/s rows go round. */
const SPREAD = 10;
const num = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });
const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
const summary = ({ samples: _, ...r }: DeliveryRun) => r;

/**
 * `noisyOnly` (BENCH_DELIVERY_CASES=noisy): the warm-up and the noisy neighbour only.
 * `twin`: a second platform for the growth rows: its tables are seeded with
 * 100,000 deliveries, and each case's passes take turns on both (growth-rows.ts).
 */
export async function deliveryRows(
  delivery: DeliveryTarget,
  deliverySeconds: number,
  noisyOnly = false,
  twin?: DeliveryTarget,
) {
  const seedMs = twin && !noisyOnly ? await seedDeliveries(twin.databaseUrl) : undefined;
  // Warm-up: connections opened, code paths compiled. 5 s at 200/s, then 2 s at the highest rate
  // over SPREAD organisations: at 200/s alone the pools were still opening connections (a new
  // PostgreSQL backend reads its catalogue afresh) during the first pass of the 500 and 1,000/s rows.
  for (const target of seedMs === undefined ? [delivery] : [delivery, twin!]) {
    await target.run(1000, 200, 1);
    if (!noisyOnly) await target.run(2000, 1000, 1, SPREAD);
  }
  const cases: [string, Parameters<DeliveryTarget["run"]>][] = noisyOnly
    ? []
    : [
        // Each fixed rate RATE_PASSES times for RATE_SECONDS, the pass with the median p95 (delivery-passes.ts).
        [
          `200 contacts/s for ${RATE_SECONDS} s, 1 subscription each, median of ${RATE_PASSES}`,
          [200 * RATE_SECONDS, 200, 1],
        ],
        // The higher rates go round SPREAD organisations, as a multi-tenant load does: one subscription
        // takes at most its in-flight cap (4) of POSTs at once, so one alone cannot take 500 a second.
        [
          `500 contacts/s for ${RATE_SECONDS} s over ${SPREAD} organisations, 1 subscription each, median of ${RATE_PASSES}`,
          [500 * RATE_SECONDS, 500, 1, SPREAD],
        ],
        [
          `1,000 contacts/s for ${RATE_SECONDS} s over ${SPREAD} organisations, 1 subscription each, median of ${RATE_PASSES}`,
          [1000 * RATE_SECONDS, 1000, 1, SPREAD],
        ],
        // Each burst BURST_PASSES times, the median pass (delivery-passes.ts).
        [
          `burst: 2,000 contacts, 32 calls in flight, 1 subscription each, median of ${BURST_PASSES}`,
          [2000, Infinity, 1],
        ],
        [
          `burst: 500 contacts, 32 calls in flight, 10 subscriptions each, median of ${BURST_PASSES}`,
          [500, Infinity, 10],
        ],
        // An ordered subscription takes one POST at a time, in commit order: its rate is one delivery per
        // round of claim, POST and record (no floor; what a receiver that asks for order gets).
        [
          `ordered: 200 contacts, 32 calls in flight, 1 ordered subscription, median of ${BURST_PASSES}`,
          [200, Infinity, 1, 1, { ordered: true }],
        ],
      ];
  const runs: [string, Row][] = [];
  const grown: Row[] = [];
  // Each row on tables as autovacuum would leave them (pipeline-vacuum.ts).
  for (const [name, args] of cases) {
    if (seedMs === undefined) {
      runs.push([name, await runCase(delivery, args)]);
    } else {
      const [row, onGrown] = await runCasePair(delivery, twin!, args);
      runs.push([name, row]);
      grown.push(onGrown);
    }
  }
  // Last: the hanging subscriptions' retries stay behind.
  const noisy = await noisyNeighbour(delivery, deliverySeconds);
  const noisyRows: [string, DeliveryRun][] = noisy.passes.map((p, i) => [
    `noisy neighbour ${Math.floor(i / 2) + 1}: 200/s, other owner's target ${p.hanging ? "hangs" : "answers"}`,
    p.quiet,
  ]);
  const width = Math.max(66, ...[...runs, ...noisyRows].map(([name]) => name.length));
  console.log(
    `\n${"Delivery (platform on PostgreSQL + NATS, receiver answers 200)".padEnd(width)} ${"events/s".padStart(9)} ${"deliv./s".padStart(9)} ${"p50 ms".padStart(7)} ${"p95 ms".padStart(7)} ${"p99 ms".padStart(7)} ${"arrived".padStart(13)} ${"failed".padStart(7)}`,
  );
  for (const [name, r] of [...runs, ...noisyRows]) {
    console.log(
      `${name.padEnd(width)} ${num(r.eventsPerSecond).padStart(9)} ${num(r.deliveriesPerSecond).padStart(9)} ${num(r.p50).padStart(7)} ${num(r.p95).padStart(7)} ${num(r.p99).padStart(7)} ${`${r.arrived}/${r.events * r.subscriptions}`.padStart(13)} ${num(r.failed).padStart(7)}`,
    );
  }
  console.log(
    `\nthe other owner (noisy neighbour), per pass: its events (failed calls), POSTs its receiver had, its open POSTs during the run (min / mean / max)`,
  );
  for (const [i, p] of noisy.passes.entries()) {
    console.log(
      `  ${Math.floor(i / 2) + 1} ${p.hanging ? "hangs  " : "answers"}  ${p.noisyCreated} (${p.noisyFailed})  ${p.noisyReceived} POSTs  open ${p.openMin} / ${p.openMean.toFixed(1)} / ${p.openMax}`,
    );
  }
  const median = (m: { p50: number; p95: number; p99: number }) => `${num(m.p50)} / ${num(m.p95)} / ${num(m.p99)}`;
  console.log(
    `\nnoisy neighbour, medians of ${noisy.passes.length / 2} passes each, p50 / p95 / p99 ms: without ${median(noisy.without)}; with ${median(noisy.with)}`,
  );
  // The delivery floors (issue 16): p95 at 200 events/s <= 250 ms, at 500/s <= 100 ms, at 1,000/s <= 250 ms,
  // nothing lost; bursts with 10 subscriptions each >= 3,000 deliveries/s; the quiet owner's p95 with a
  // hanging subscription of another owner <= 1.5x without, none lost.
  const keptUp = (r: DeliveryRun, p95: number) => r.p95 <= p95 && !lostOrFailed(r);
  const rates: [string, DeliveryRun | undefined, number][] = [
    ["200", runs[0]?.[1], 250],
    ["500", runs[1]?.[1], 100],
    ["1,000", runs[2]?.[1], 250],
  ];
  const burst = runs[4]?.[1];
  const floors = runs.length
    ? {
        rates: rates.map(([rate, r, p95]) => ({ rate, p95: r!.p95, floor: p95, met: keptUp(r!, p95) })),
        burst10: burst!.deliveriesPerSecond,
        burst10Met: burst!.deliveriesPerSecond >= 3000 && !lostOrFailed(burst!),
      }
    : undefined;
  console.log(
    `\nfloors, delivery: ` +
      (floors
        ? floors.rates
            .map((f) => `p95 at ${f.rate} events/s ${num(f.p95)} ms (<= ${f.floor}, none lost: ${verdict(f.met)}); `)
            .join("") +
          `burst with 10 subscriptions each ${num(floors.burst10)} deliveries/s (>= 3,000: ${verdict(floors.burst10Met)}); `
        : "") +
      `noisy neighbour p95 with / without a hanging subscription ${num(noisy.with.p95)} / ${num(noisy.without.p95)} ms = ${noisy.ratio.toFixed(2)}x ` +
      `(<= ${NOISY_FLOOR}x; ${noisy.lost} lost, ${noisy.failedCalls} calls failed: ` +
      (noisy.met === null
        ? `no verdict: the passes without fell behind, p95 over ${BASELINE_P95_MS} ms)`
        : `${verdict(noisy.met)})`),
  );
  // The growth rows, after the floors above: the twin's row of each case beside the rows'.
  const growth =
    seedMs === undefined
      ? undefined
      : deliveryGrowth(
          seedMs,
          runs.map(([name, before], i) => ({ name, args: cases[i]![1], before, after: grown[i]! })),
        );
  return {
    growth,
    seconds: deliverySeconds,
    rates: { seconds: RATE_SECONDS, passes: RATE_PASSES },
    rows: runs.map(([name, r]) => ({ name, ...summary(r) })),
    noisyNeighbour: {
      floor: NOISY_FLOOR,
      ratio: noisy.ratio,
      lost: noisy.lost,
      failedCalls: noisy.failedCalls,
      baselineKeptUp: noisy.baselineKeptUp,
      met: noisy.met,
      without: noisy.without,
      with: noisy.with,
      passes: noisy.passes.map((p, i) => ({ ...p, name: noisyRows[i]![0], quiet: summary(p.quiet) })),
    },
    floors,
  };
}
