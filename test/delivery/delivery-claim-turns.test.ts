// The claim goes round the owners with due work: an owner with a long queue
// of older deliveries does not hold back another owner's newer ones, and each
// subscription's claimed rows stay within its in-flight cap. The claim itself
// on real PostgreSQL, over rows as the fan-out writes them.
import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import type { DeliveryStore } from "../../services/delivery/deliveries/delivery-store.js";
import { startDeliverySchema, type DeliverySchema } from "../support/delivery-schema.js";
import { waitFor } from "../support/processes.js";

let schema: DeliverySchema;
let orm: MikroORM;
let store: DeliveryStore;
let nextSubscription = 1;

beforeAll(async () => {
  // The delivery schema alone: no worker claims behind the test's back.
  schema = await startDeliverySchema("t".repeat(40));
  ({ orm, store } = schema);
});

afterAll(async () => {
  await schema?.stop();
});

/** An owner's subscription with `count` pending deliveries, due `ageSeconds` ago (oldest first). */
async function queue(
  owner: { organisationId: string; clientId: string },
  count: number,
  ageSeconds: number,
): Promise<bigint> {
  const subscriptionId = BigInt(nextSubscription++);
  for (let i = 0; i < count; i++) {
    const eventId = randomUUID();
    const due = new Date(Date.now() - (ageSeconds - i) * 1000);
    await orm.em
      .fork()
      .execute(
        `insert into "delivery"."delivery_event" ("event_id", "event_type", "organisation_id", "body", "created_at") values (?, 'contact.created', ?, '{}', now())`,
        [eventId, owner.organisationId],
      );
    await orm.em.fork().execute(
      `insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "next_attempt_at", "created_at", "updated_at")
       values (?, ?, ?, ?, 'contact.created', 'pending', ?, now(), now())`,
      [eventId, subscriptionId.toString(), owner.organisationId, owner.clientId, due],
    );
  }
  return subscriptionId;
}

// Each test starts from no deliveries at all.
beforeEach(async () => {
  await orm.em.fork().execute(`delete from "delivery"."delivery"`);
});

const owner = (clientId: string) => ({ organisationId: randomUUID(), clientId });

it("an owner with a long queue of older deliveries gets a turn, not every slot: the newer owner's come in the same claim", async () => {
  const busy = owner("busy");
  const busyOne = await queue(busy, 10, 600);
  const busyTwo = await queue(busy, 10, 500);
  const quiet = owner("quiet");
  const quietOne = await queue(quiet, 2, 5);

  const claimed = await store.claim(4, 60, 100);
  const bySubscription = (id: bigint) => claimed.filter((d) => d.subscriptionId === id).length;
  // The first turn of each owner, then the second: two of each owner's, although all the busy owner's are older.
  expect(bySubscription(quietOne)).toBe(2);
  expect(bySubscription(busyOne) + bySubscription(busyTwo)).toBe(2);
  // Within the busy owner, its subscriptions take turns too.
  expect(bySubscription(busyOne)).toBe(1);
  expect(bySubscription(busyTwo)).toBe(1);
});

it("a claim takes no more of a subscription than its cap less what is already claimed and not yet recorded", async () => {
  const one = owner("capped");
  const capped = await queue(one, 10, 300);
  const first = await store.claim(3, 60, 4);
  expect(first.map((d) => d.subscriptionId)).toEqual([capped, capped, capped]);
  // One slot left of four, whatever the claim asks for.
  expect(await store.claim(10, 60, 4)).toHaveLength(1);
  expect(await store.claim(10, 60, 4)).toHaveLength(0);
  // A recorded attempt frees its slot.
  const [done] = first;
  await store.record({
    delivery: done!,
    status: "succeeded",
    outcome: "succeeded",
    responseStatus: 200,
    error: "",
    durationMs: 1,
    attemptedAt: new Date(),
    nextAttemptAt: null,
  });
  expect(await store.claim(10, 60, 4)).toHaveLength(1);
  // A claim whose lease ran out no longer counts: its row is due again, and claimed again within the cap.
  const short = owner("lease");
  const leased = await queue(short, 3, 300);
  expect(await store.claim(10, 1, 2)).toHaveLength(2);
  expect((await store.claim(10, 60, 2)).filter((d) => d.subscriptionId === leased)).toHaveLength(0);
  // The 1 s leases run out on the database's clock, which the claim reads.
  await waitFor(
    async () => {
      const held: unknown[] = await orm.em.fork().execute(
        `select 1 from "delivery"."delivery"
        where "subscription_id" = ? and "claim_id" is not null and "next_attempt_at" > now()`,
        [leased.toString()],
      );
      return held.length === 0 ? true : undefined;
    },
    10_000,
    "the leases to run out",
  );
  expect((await store.claim(10, 60, 2)).filter((d) => d.subscriptionId === leased)).toHaveLength(2);
});
