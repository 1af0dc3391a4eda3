// The delivery table is a queue: an ANALYZE may run when no row is pending,
// and the hot statements then run against thousands of pending rows planned
// on statistics that saw none. Each of them must still read only its own
// subscription's rows through a partial index (migration 2026-12-12): here
// the statistics are taken with every row succeeded, then a burst's pending
// rows arrive, and the hand-on's next rows and the in-flight count (as
// hand-on.ts and delivery-claim.ts write them) and the whole claim are explained as run.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MikroORM } from "@mikro-orm/postgresql";
import { DELIVERY_ENTITIES } from "../../services/delivery/delivery-app.js";
import { DELIVERY_SCHEMA } from "../../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { CLAIM_SQL } from "../../services/delivery/deliveries/delivery-claim.js";
import { explained, migratedSchema, type MigratedSchema, type PlanNode } from "../support/query-plans.js";

const SUBSCRIPTIONS = 10;
let schema: MigratedSchema;
let orm: MikroORM;

async function explain(sql: string): Promise<PlanNode[]> {
  return explained(await orm.em.fork().execute(`explain (analyze, format json) ${sql}`));
}

const rows = (kind: "succeeded" | "pending", from: number, count: number, claimed: boolean) =>
  `insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "attempts",
     "next_attempt_at", "claim_id", "created_at", "updated_at")
   select gen_random_uuid(), 1 + (i % ${SUBSCRIPTIONS}), '00000000-0000-4000-8000-000000000001', 'plans', 'contact.created', '${kind}', 1,
     ${kind === "pending" ? (claimed ? "now() + interval '30 seconds'" : "now() - interval '1 second'") : "null"},
     ${claimed ? "gen_random_uuid()" : "null"}, now(), now()
   from generate_series(${from}, ${from + count - 1}) as i`;

beforeAll(async () => {
  schema = await migratedSchema({
    schema: DELIVERY_SCHEMA,
    entities: DELIVERY_ENTITIES,
    migrations: deliveryMigrations,
  });
  orm = schema.orm;
  const em = orm.em.fork();
  // The history, analysed while nothing is pending.
  await em.execute(rows("succeeded", 0, 20_000, false));
  await em.execute(`analyze "delivery"."delivery"`);
  // Then a burst: 400 due rows a subscription, and 4 in flight for each.
  await em.execute(rows("pending", 20_000, 4_000, false));
  await em.execute(rows("pending", 30_000, 4 * SUBSCRIPTIONS, true));
}, 120_000);

afterAll(async () => {
  await schema?.close();
});

describe("the queue's hot statements, planned on statistics that saw no pending row", () => {
  it("the hand-on's next rows of one subscription come from the pending index, without reading the others'", async () => {
    const plan = await explain(
      `select d."id" from "delivery"."delivery" d
        where d."subscription_id" = 3 and d."status" = 'pending' and d."next_attempt_at" <= now()
        order by d."next_attempt_at", d."id" limit 4 for update skip locked`,
    );
    const scans = plan.filter((n) => n["Node Type"].includes("Scan"));
    expect(scans.map((n) => n["Index Name"])).toEqual(["delivery_pending_index"]);
    expect(scans[0]!["Rows Removed by Filter"] ?? 0).toBeLessThan(100);
    expect(plan.find((n) => n["Node Type"] === "Limit")?.["Actual Rows"]).toBe(4);
  });

  it("one subscription's count in flight reads its claimed rows only", async () => {
    const plan = await explain(
      `select count(*)::int from "delivery"."delivery" h
        where h."subscription_id" = 3 and h."status" = 'pending' and h."claim_id" is not null and h."next_attempt_at" > now()`,
    );
    const scans = plan.filter((n) => n["Node Type"].includes("Scan"));
    expect(scans).toHaveLength(1);
    expect(["delivery_in_flight_index", "delivery_pending_index"]).toContain(scans[0]!["Index Name"]);
    // Its 4 claimed rows, and at most its own 400 due ones besides: never the other subscriptions'.
    expect((scans[0]!["Actual Rows"] ?? 0) + (scans[0]!["Rows Removed by Filter"] ?? 0)).toBeLessThanOrEqual(404);
    expect(scans[0]!["Actual Rows"]).toBe(4);
  });

  it("the claim, planned with its values as delivery-claim.ts sends it, reads the queue by index and claims each subscription's free slots", async () => {
    // Cap 8 with 4 in flight: 4 free slots in each of the 10 subscriptions.
    const em = orm.em.fork();
    await em.begin();
    try {
      const plan = explained(
        await em.execute(`explain (analyze, format json) ${CLAIM_SQL}`, [
          8,
          100,
          8,
          null,
          null,
          100,
          30,
          crypto.randomUUID(),
        ]),
      );
      const scans = plan.filter((n) => n["Node Type"].includes("Scan") && n["Relation Name"] === "delivery");
      expect(scans.length).toBeGreaterThan(0);
      expect(scans.filter((n) => n["Node Type"] === "Seq Scan")).toEqual([]);
      // Never the 20,000 succeeded rows, nor more than a subscription's due rows at a time.
      for (const scan of scans)
        expect((scan["Actual Rows"] ?? 0) + (scan["Rows Removed by Filter"] ?? 0)).toBeLessThan(4_100);
      expect(plan[0]!["Actual Rows"]).toBe(4 * SUBSCRIPTIONS);
    } finally {
      await em.rollback();
    }
  });

  it("the broad status indexes are gone", async () => {
    const indexes = await orm.em
      .fork()
      .execute<{ indexname: string }[]>(
        `select indexname from pg_indexes where schemaname = 'delivery' and tablename = 'delivery' order by indexname`,
      );
    const names = indexes.map((i) => i.indexname);
    expect(names).not.toContain("delivery_due_index");
    expect(names).not.toContain("delivery_status_index");
    expect(names).toEqual(expect.arrayContaining(["delivery_pending_index", "delivery_in_flight_index"]));
  });
});
