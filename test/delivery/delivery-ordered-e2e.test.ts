// Ordered delivery as a team tries it from docs/interface.md, through REST
// only, on real PostgreSQL and NATS: a subscription created with
// {"ordered": true} whose receiver fails the first event (500) until it is
// fixed. While it fails, GET shows the subscription blocked (blocked_since:
// the head's first failed attempt in the delivery log; blocked_delivery_id:
// that delivery) and no later event has arrived; once the receiver recovers,
// the head arrives, then the rest, in commit order (the stream's order), and
// GET shows blocked_* null again. A PUT {"ordered": false} turns it off.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { waitFor } from "../support/processes.js";
import type { Received } from "../support/receiver.js";
import { readStream } from "../support/stream.js";
import {
  app,
  attempts,
  call,
  createContact,
  orgId,
  PATH,
  platform,
  receiver,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

// A retry every half second for about 20 s: the head is still retrying while the test looks at it.
useDeliveryApiSuite({
  DELIVERY_RETRY_SCHEDULE_SECONDS: Array.from({ length: 40 }, () => "0.5").join(","),
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "3600",
  WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
});

interface Shown {
  id: number;
  ordered: boolean;
  blocked_since: string | null;
  blocked_delivery_id: number | null;
}

const eventIdOf = (r: Received) => String(r.headers["webhook-id"]).toLowerCase();

async function getOne(id: number): Promise<Shown> {
  const res = await call(app, "GET", `${PATH}/${id}`);
  const body = (await res.json()) as Shown;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

/** The owner's events in the stream's order: the order their changes committed. */
async function commitOrder(): Promise<string[]> {
  const stored = await readStream(platform.config.NATS_URL!, platform.config.NATS_STREAM);
  return stored
    .filter((s) => s.event.organisationId.toLowerCase() === orgId.toLowerCase())
    .map((s) => s.event.eventId.toLowerCase());
}

it("a failing head blocks an ordered subscription (GET shows it), then everything arrives in commit order and the block clears", async () => {
  expect(platform.config.NATS_URL, "this test runs on NATS").toBeTruthy();
  let fixed = false;
  // The first event to arrive is answered 500 until the receiver is fixed; everything else 200.
  const route = receiver.route(`/ordered-e2e/${randomUUID()}`, (n) => {
    const head = eventIdOf(route.requests[0]!);
    return !fixed && eventIdOf(route.requests[n - 1]!) === head ? { status: 500 } : { status: 200 };
  });
  const created = await call(app, "POST", PATH, {
    target_url: route.url,
    event_type: "contact.created",
    ordered: true,
  });
  const sub = (await created.json()) as Shown;
  expect(created.status, JSON.stringify(sub)).toBe(201);
  expect(sub).toMatchObject({ ordered: true, blocked_since: null, blocked_delivery_id: null });

  const count = 4;
  for (let i = 0; i < count; i++) await createContact(orgId, `Ordered${i}`);
  const order = await waitFor(
    async () => {
      const o = await commitOrder();
      return o.length === count ? o : undefined;
    },
    30_000,
    "the events in the stream",
  );

  // The head has failed three times: every event has long been recorded, and none behind the head went.
  const failed = await waitFor(
    async () => {
      const log = await attempts(app, sub.id);
      return log.filter((a) => a.outcome === "failed").length >= 3 ? log : undefined;
    },
    30_000,
    "three failed attempts of the head",
  );
  const first = failed[failed.length - 1]!; // newest first: the last is the first attempt
  expect(first).toMatchObject({ outcome: "failed", status_code: 500, event_id: order[0] });
  expect(failed.every((a) => a.delivery_id === first.delivery_id)).toBe(true);
  const blocked = await getOne(sub.id);
  expect(blocked).toMatchObject({
    ordered: true,
    blocked_since: first.attempted_at,
    blocked_delivery_id: first.delivery_id,
  });
  expect(new Set(route.requests.map(eventIdOf))).toEqual(new Set([order[0]]));

  // The receiver recovers: the head arrives, then the rest in commit order, each once.
  fixed = true;
  await waitFor(
    () => (new Set(route.requests.map(eventIdOf)).size === count ? true : undefined),
    30_000,
    "every event",
  );
  const heads = route.requests.filter((r) => eventIdOf(r) === order[0]).length;
  expect(route.requests.map(eventIdOf)).toEqual([...Array.from({ length: heads }, () => order[0]), ...order.slice(1)]);
  await waitFor(
    async () =>
      (await attempts(app, sub.id)).filter((a) => a.outcome === "succeeded").length === count ? true : undefined,
    30_000,
    "every success logged",
  );
  expect(await getOne(sub.id)).toMatchObject({ ordered: true, blocked_since: null, blocked_delivery_id: null });

  // Turned off with PUT: GET shows it.
  const put = await call(app, "PUT", `${PATH}/${sub.id}`, { ordered: false });
  expect(put.status).toBe(200);
  expect(await put.json()).toMatchObject({ id: sub.id, ordered: false });
  expect(await getOne(sub.id)).toMatchObject({ ordered: false, blocked_since: null, blocked_delivery_id: null });
}, 120_000);
