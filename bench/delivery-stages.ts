// Stage timings of one delivery run: contacts at a fixed rate (200/s unless given),
// one subscription each, then per delivery: commit (CreateContact returned) →
// outbox row (its transaction's now()) → published (relay marked it) → fan-out
// row → POST started (attempt minus its duration) → arrival at the receiver.
// Run: npx tsx bench/delivery-stages.ts [seconds] [events/s] [organisations]
// (the events go round that many organisations, 1 unless given); BENCH_CPU_PROF=dir adds --cpu-prof;
// BENCH_PG_ACTIVITY=1 samples pg_stat_activity during the measured run.
import pg from "pg";
import { startDeliveryTarget } from "./delivery-target.js";
import { startActivitySampler } from "./pg-activity-sample.js";
import { vacuumPipeline } from "./pipeline-vacuum.js";

const seconds = Number(process.argv[2] ?? 10);
const rate = Number(process.argv[3] ?? 200);
const spread = Number(process.argv[4] ?? 1);
const prof = process.env.BENCH_CPU_PROF;
const target = await startDeliveryTarget(prof ? ["--cpu-prof", `--cpu-prof-dir=${prof}`] : []);
try {
  // Warm-up at 200/s whatever the rate measured.
  await target.run(1000, 200, 1);
  // As the bench's passes run (delivery-passes.ts): on tables analyzed, as autovacuum leaves them.
  // Without it the measured run starts with the plans of tables never analyzed (each record
  // statement reads the deliveries by a sequential scan).
  await vacuumPipeline(target.databaseUrl);
  const sampler = process.env.BENCH_PG_ACTIVITY
    ? await startActivitySampler(new URL(target.databaseUrl).pathname.slice(1))
    : undefined;
  const runStarted = new Date();
  const run = await target.run(Math.round(rate * seconds), rate, 1, spread);
  const activity = await sampler?.stop();
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  const { rows } = await client.query(`
    select (e.body::json->'data'->>'id') as contact_id,
           extract(epoch from o.created_at) * 1000 as outbox_at,
           extract(epoch from o.published_at) * 1000 as published_at,
           extract(epoch from d.created_at) * 1000 as fanout_at,
           extract(epoch from a.attempted_at) * 1000 - a.duration_ms as post_at
      from delivery.delivery_event e
      join organisation.outbox o on o.id = e.event_id
      join delivery.delivery d on d.event_id = e.event_id
      join delivery.delivery_attempt a on a.delivery_id = d.id and a.attempt = 1`);
  // What the write side managed: the measured run's outbox rows (committed contacts, failed calls' included).
  const [written] = (
    await client.query(
      `select count(*)::int as n, coalesce(extract(epoch from max(created_at) - min(created_at)), 0)::float8 as s
         from organisation.outbox where created_at >= $1`,
      [runStarted],
    )
  ).rows;
  await client.end();
  const byContact = new Map(rows.map((r) => [r.contact_id as string, r]));
  const stages: Record<string, number[]> = {
    "commit→arrival": [],
    "outbox→commit": [],
    "outbox→published": [],
    "published→fanout": [],
    "fanout→post": [],
    "post→arrival": [],
    "outbox→arrival": [],
  };
  for (const s of run.samples) {
    const r = byContact.get(s.contactId);
    if (!r) continue;
    const [o, p, f, q] = [r.outbox_at, r.published_at, r.fanout_at, r.post_at].map(Number);
    stages["commit→arrival"].push(s.arrivedAt - s.committedAt);
    stages["outbox→commit"].push(s.committedAt - o);
    stages["outbox→published"].push(p - o);
    stages["published→fanout"].push(f - p);
    stages["fanout→post"].push(q - f);
    stages["post→arrival"].push(s.arrivedAt - q);
    stages["outbox→arrival"].push(s.arrivedAt - o);
  }
  const pct = (a: number[], p: number) => a[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];
  console.log(
    `rate ${rate}/s asked, events/s ${run.eventsPerSecond.toFixed(0)}, arrived ${run.arrived}/${run.events}, failed ${run.failed}, matched ${stages["commit→arrival"].length}`,
  );
  console.log(
    `outbox rows written ${written.n} in ${Number(written.s).toFixed(1)} s: ${(written.n / Math.max(Number(written.s), 0.001)).toFixed(0)}/s`,
  );
  for (const [name, a] of Object.entries(stages)) {
    if (a.length === 0) continue;
    a.sort((x, y) => x - y);
    console.log(
      `${name.padEnd(20)} p50 ${pct(a, 50).toFixed(1).padStart(7)}  p95 ${pct(a, 95).toFixed(1).padStart(7)}  p99 ${pct(a, 99).toFixed(1).padStart(7)}  max ${a[a.length - 1].toFixed(1).padStart(7)}`,
    );
  }
  if (activity) console.log(activity);
} finally {
  await target.close();
}
