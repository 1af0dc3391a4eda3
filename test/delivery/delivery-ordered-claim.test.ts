// The claim of an ordered subscription's deliveries, on real PostgreSQL, over
// rows as the fan-out writes them (recordFanOut, batches recorded out of
// stream order as two fan-out processes may): only the head (the oldest
// pending by stream sequence) is claimed, alone, and only once the fan-out's
// watermark covers it; a head waiting for its retry holds back the rest; a
// manual retry of a later one waits its turn; an unordered subscription of
// the same events is claimed as ever.
import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ClaimedDelivery, DeliveryStore } from "../../services/delivery/deliveries/delivery-store.js";
import { startDeliverySchema, type DeliverySchema } from "../support/delivery-schema.js";

let schema: DeliverySchema;
let orm: MikroORM;
let store: DeliveryStore;

beforeAll(async () => {
  // The delivery schema alone: no worker claims behind the test's back.
  schema = await startDeliverySchema("u".repeat(40));
  ({ orm, store } = schema);
});

afterAll(async () => {
  await schema?.stop();
});

const ORDERED = 101n;
const UNORDERED = 102n;
const organisationId = randomUUID();
const owner = { organisationId, clientId: "zapier" };

/** A fan-out batch of the events at these stream sequences, for both subscriptions; returns their event ids by sequence. */
async function fanOut(sequences: number[]): Promise<Map<number, string>> {
  const ids = new Map(sequences.map((seq) => [seq, randomUUID()]));
  await store.recordFanOut({
    consumer: "delivery-contacts",
    streamSequence: Math.max(...sequences),
    events: sequences.map((seq) => ({
      eventId: ids.get(seq)!,
      eventType: "contact.created",
      organisationId,
      body: `{"seq":${seq}}`,
      streamSequence: seq,
      traceparent: undefined,
      subscribers: [
        { subscriptionId: ORDERED, clientId: "zapier", ordered: true },
        { subscriptionId: UNORDERED, clientId: "zapier" },
      ],
    })),
  });
  return ids;
}

const claim = (watermark: number) => store.claim(10, 60, 4, watermark);
const orderedOf = (claimed: ClaimedDelivery[]) =>
  claimed.filter((d) => d.subscriptionId === ORDERED).map((d) => JSON.parse(d.body).seq as number);

async function finish(
  d: ClaimedDelivery,
  status: "succeeded" | "pending" | "gave_up",
  nextAttemptAt: Date | null = null,
): Promise<void> {
  const outcome = status === "pending" ? "failed" : status;
  await store.record({
    delivery: d,
    status,
    outcome,
    responseStatus: status === "succeeded" ? 200 : 500,
    error: "",
    durationMs: 1,
    attemptedAt: new Date(),
    nextAttemptAt,
  });
}

it("claims only the head, alone, once the watermark covers it; a waiting head holds back the rest; a retry of a later one waits its turn", async () => {
  // The later batch (seq 3, 4) is recorded before the earlier one (seq 1, 2): the watermark (the
  // fan-out's ack floor) is still below 1, so the ordered subscription gets nothing yet.
  await fanOut([3, 4]);
  let claimed = await claim(0);
  expect(orderedOf(claimed)).toEqual([]);
  // The unordered subscription is not held back: both of its rows are claimed.
  expect(claimed.filter((d) => d.subscriptionId === UNORDERED)).toHaveLength(2);
  const first = await fanOut([1, 2]);

  // Everything recorded: the head (seq 1) alone, though seq 3 was recorded first.
  claimed = await claim(4);
  expect(orderedOf(claimed)).toEqual([1]);
  const head = claimed.find((d) => d.subscriptionId === ORDERED)!;
  expect(head.ordered).toBe(true);
  // In flight: nothing more of the subscription.
  expect(orderedOf(await claim(4))).toEqual([]);

  // The head fails and waits for its retry: the rest wait with it, a manual retry of seq 2 too.
  await finish(head, "pending", new Date(Date.now() + 3_600_000));
  const second = (
    await orm.em
      .fork()
      .execute(`select "id"::text as "id" from "delivery"."delivery" where "event_id" = ? and "subscription_id" = ?`, [
        first.get(2)!,
        ORDERED.toString(),
      ])
  )[0]!;
  expect(await store.retryNow(owner, ORDERED, BigInt(second.id as string))).toBeDefined();
  expect(orderedOf(await claim(4))).toEqual([]);

  // The head's retry is due (a manual retry of the head): it goes again, alone.
  expect(await store.retryNow(owner, ORDERED, head.id)).toBeDefined();
  claimed = await claim(4);
  expect(orderedOf(claimed)).toEqual([1]);
  // It gives up: the next one is the head.
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "gave_up");
  claimed = await claim(4);
  expect(orderedOf(claimed)).toEqual([2]);
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "succeeded");

  // A later batch past the watermark waits for it, even as the head.
  await fanOut([5]);
  claimed = await claim(4);
  expect(orderedOf(claimed)).toEqual([3]);
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "succeeded");
  claimed = await claim(4);
  expect(orderedOf(claimed)).toEqual([4]);
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "succeeded");
  expect(orderedOf(await claim(4))).toEqual([]);
  claimed = await claim(5);
  expect(orderedOf(claimed)).toEqual([5]);
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "succeeded");

  // A manual retry of an event older than every pending one (seq 2, delivered) makes it the head again: it goes before seq 6.
  await fanOut([6]);
  expect(await store.retryNow(owner, ORDERED, BigInt(second.id as string))).toBeDefined();
  claimed = await claim(6);
  expect(orderedOf(claimed)).toEqual([2]);
  await finish(claimed.find((d) => d.subscriptionId === ORDERED)!, "succeeded");
  expect(orderedOf(await claim(6))).toEqual([6]);
});
