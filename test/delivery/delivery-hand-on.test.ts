// Handing a slot on (services/delivery/deliveries/hand-on.ts): the statement
// that records successful attempts also claims as many of their
// subscriptions' next due rows, within the cap, and nothing for a failure, a
// paused or an ordered subscription. The store itself on real PostgreSQL.
import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveryStore,
} from "../../services/delivery/deliveries/delivery-store.js";
import { startDeliverySchema, type DeliverySchema } from "../support/delivery-schema.js";

let schema: DeliverySchema;
let orm: MikroORM;
let store: DeliveryStore;
let nextSubscription = 1;

beforeAll(async () => {
  schema = await startDeliverySchema("h".repeat(40));
  ({ orm, store } = schema);
});

afterAll(async () => {
  await schema?.stop();
});

beforeEach(async () => {
  await orm.em.fork().execute(`delete from "delivery"."delivery"`);
  await orm.em.fork().execute(`delete from "delivery"."subscription_pause"`);
});

/** A subscription with `count` pending deliveries, due now, oldest first; `ordered` marks them as an ordered subscription's. */
async function queue(count: number, ordered = false): Promise<bigint> {
  const subscriptionId = BigInt(nextSubscription++);
  const organisationId = randomUUID();
  for (let i = 0; i < count; i++) {
    const eventId = randomUUID();
    await orm.em
      .fork()
      .execute(
        `insert into "delivery"."delivery_event" ("event_id", "event_type", "organisation_id", "body", "created_at") values (?, 'contact.created', ?, ?, now())`,
        [eventId, organisationId, JSON.stringify({ n: i })],
      );
    await orm.em.fork().execute(
      `insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "next_attempt_at",
         "ordered", "stream_sequence", "created_at", "updated_at")
       values (?, ?, ?, 'app', 'contact.created', 'pending', now() - make_interval(secs => ?), ?, ?, now(), now())`,
      [eventId, subscriptionId.toString(), organisationId, count - i, ordered, ordered ? i + 1 : null],
    );
  }
  return subscriptionId;
}

const answered = (d: ClaimedDelivery, status: number): AttemptRecord => ({
  delivery: d,
  status: status < 300 ? "succeeded" : "pending",
  outcome: status < 300 ? "succeeded" : "failed",
  responseStatus: status,
  error: status < 300 ? "" : `HTTP ${status}`,
  durationMs: 2,
  attemptedAt: new Date(),
  nextAttemptAt: status < 300 ? null : new Date(Date.now() + 60_000),
});

const inFlight = async (subscriptionId: bigint) => {
  const [row] = await orm.em
    .fork()
    .execute<{ n: number }[]>(
      `select count(*)::int as "n" from "delivery"."delivery" where "subscription_id" = ? and "status" = 'pending' and "claim_id" is not null and "next_attempt_at" > now()`,
      [subscriptionId.toString()],
    );
  return row!.n;
};

const bodies = (rows: ClaimedDelivery[]) => rows.map((d) => JSON.parse(d.body).n as number);

it("each success hands its slot to the subscription's next due row, oldest first, in the recording statement", async () => {
  const sub = await queue(10);
  const first = await store.claim(10, 60, 4);
  expect(bodies(first)).toEqual([0, 1, 2, 3]);
  const next = await store.recordMany([answered(first[0]!, 200), answered(first[1]!, 200)], 4, 60);
  expect(bodies(next)).toEqual([4, 5]);
  expect(next.every((d) => d.subscriptionId === sub && d.attempt === 1 && d.claimId !== first[0]!.claimId)).toBe(true);
  // Two recorded, two handed on: still the cap in flight, never more.
  expect(await inFlight(sub)).toBe(4);
  // The handed-on rows are this worker's claim: recording them frees their slots as a claim's would.
  const after = await store.recordMany(
    next.map((d) => answered(d, 200)),
    4,
  );
  expect(after).toEqual([]);
  expect(await inFlight(sub)).toBe(2);
  // Without handing on, nothing is claimed and the rows wait for the claim (round the owners).
  expect(await store.claim(10, 60, 4)).toHaveLength(2);
});

it("a failed attempt frees its slot for the claim instead; so does a success once the queue is empty", async () => {
  const sub = await queue(6);
  const first = await store.claim(10, 60, 4);
  const next = await store.recordMany([answered(first[0]!, 500), answered(first[1]!, 200)], 4, 60);
  // Only the success is handed on.
  expect(bodies(next)).toEqual([4]);
  expect(await inFlight(sub)).toBe(3);
  const last = await store.recordMany([answered(first[2]!, 200), answered(first[3]!, 200)], 4, 60);
  expect(bodies(last)).toEqual([5]);
  expect(await store.recordMany([answered(last[0]!, 200), answered(next[0]!, 200)], 4, 60)).toEqual([]);
  expect(await inFlight(sub)).toBe(0);
});

it("a subscription whose cap was lowered gets only what fits under it; a paused one gets nothing", async () => {
  const lowered = await queue(8);
  const held = await store.claim(10, 60, 4);
  // Its target answered 503s meanwhile: the cap is 2 now.
  await orm.em
    .fork()
    .execute(
      `insert into "delivery"."subscription_pause" ("subscription_id", "in_flight_cap", "reason", "updated_at") values (?, 2, '503', now())`,
      [lowered.toString()],
    );
  // Two successes recorded of four held: two stay in flight, the cap of 2 is full, nothing is handed on.
  expect(await store.recordMany([answered(held[0]!, 200), answered(held[1]!, 200)], 4, 60)).toEqual([]);
  expect(await inFlight(lowered)).toBe(2);
  // One more success: one in flight, one free slot under the cap, handed on.
  expect(await store.recordMany([answered(held[2]!, 200)], 4, 60)).toHaveLength(1);
  expect(await inFlight(lowered)).toBe(2);

  const paused = await queue(4);
  const claimed = await store.claim(10, 60, 4);
  await orm.em
    .fork()
    .execute(
      `insert into "delivery"."subscription_pause" ("subscription_id", "paused_until", "reason", "updated_at") values (?, now() + interval '1 minute', '429', now())`,
      [paused.toString()],
    );
  const mine = claimed.filter((d) => d.subscriptionId === paused);
  expect(mine.length).toBeGreaterThan(0);
  expect(await store.recordMany([answered(mine[0]!, 200)], 4, 60)).toEqual([]);
});

it("an ordered subscription's slot is never handed on: its next head is the claim's to pick, against the watermark", async () => {
  const sub = await queue(3, true);
  const [head] = await store.claim(10, 60, 4, 100);
  expect(head?.subscriptionId).toBe(sub);
  expect(await store.recordMany([answered(head!, 200)], 4, 60)).toEqual([]);
  expect(await inFlight(sub)).toBe(0);
});

it("another subscription's rows are never handed a slot", async () => {
  const busy = await queue(2);
  const other = await queue(5);
  const claimed = await store.claim(10, 60, 1);
  const mine = claimed.find((d) => d.subscriptionId === busy)!;
  const next = await store.recordMany([answered(mine, 200)], 1, 60);
  expect(next.map((d) => d.subscriptionId)).toEqual([busy]);
  expect(await inFlight(other)).toBe(1);
});
