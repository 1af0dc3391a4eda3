// The subscription shows throttled_until while its target's pause runs (a 429
// with Retry-After), on GET and in the list, and null again after it; a retry
// during the pause answers next_retry_at = the pause's end (when the POST
// really goes), and the delivery log's next sends say the same.
import { expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  orgId,
  PATH,
  platform,
  receiver,
  RFC3339,
  subscribe,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

const PAUSE_S = 6;
// Same machine, one clock: the database's now(), the worker's and the receiver's Date.now() agree to within this.
const SLACK_MS = 250;

useDeliveryApiSuite({ DELIVERY_RETRY_AFTER_MAX_SECONDS: "60", WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "1" });

interface Shown {
  id: number;
  throttled_until: string | null;
  in_flight_cap: number | null;
  blocked_since: string | null;
  blocked_delivery_id: number | null;
}

async function getOne(id: number): Promise<Shown> {
  const res = await call(app, "GET", `${PATH}/${id}`);
  const body = (await res.json()) as Shown;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

async function listed(): Promise<Shown[]> {
  const res = await call(app, "GET", PATH);
  const body = (await res.json()) as Shown[];
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

it("throttled_until is the pause's end on GET and in the list while it runs, a retry and the next sends wait for it, and it is null after", async () => {
  // The first POST is answered 429 with Retry-After; every later one 200.
  const route = receiver.route("/throttled-state", (n) =>
    n === 1 ? { status: 429, headers: { "retry-after": String(PAUSE_S) } } : { status: 200 },
  );
  const throttled = await subscribe(app, route.url);
  const other = await subscribe(app, receiver.route("/not-throttled").url);
  expect(await getOne(throttled.id)).toMatchObject({
    throttled_until: null,
    in_flight_cap: null,
    blocked_since: null,
    blocked_delivery_id: null,
  });

  await createContact(orgId, "Paused");
  const [first] = await waitFor(
    () => (route.requests.length >= 1 ? route.requests : undefined),
    20_000,
    "the POST answered 429",
  );
  const shown = await waitFor(
    async () => (await getOne(throttled.id)).throttled_until ?? undefined,
    10_000,
    "throttled_until on GET",
  );
  expect(shown).toMatch(RFC3339);
  const pauseEnd = Date.parse(shown);
  expect(pauseEnd).toBeGreaterThanOrEqual(first!.at + PAUSE_S * 1000 - SLACK_MS);
  expect(pauseEnd).toBeLessThanOrEqual(first!.at + PAUSE_S * 1000 + 2_000);
  expect(await getOne(throttled.id)).toMatchObject({ blocked_since: null, blocked_delivery_id: null });

  // The list: the same time for the throttled one, null for the other.
  const page = await listed();
  expect(page.find((s) => s.id === throttled.id)).toMatchObject({
    throttled_until: shown,
    blocked_since: null,
    blocked_delivery_id: null,
  });
  expect(page.find((s) => s.id === other.id)).toMatchObject({
    throttled_until: null,
    blocked_since: null,
    blocked_delivery_id: null,
  });

  // A retry of the throttled delivery during the pause: it goes when the pause ends, and says so.
  const [attempt] = await attempts(app, throttled.id);
  expect(attempt).toMatchObject({ status_code: 429, outcome: "failed" });
  const retried = await call(app, "POST", `${PATH}/${throttled.id}/deliveries/${attempt!.delivery_id}/retry`);
  const retryBody = (await retried.json()) as { status: string; next_retry_at: string | null };
  expect(retried.status, JSON.stringify(retryBody)).toBe(202);
  expect(Date.now(), "asked during the pause").toBeLessThan(pauseEnd - 500);
  expect(retryBody).toMatchObject({ status: "pending", next_retry_at: shown });

  // An event that comes during the pause: the delivery log says it is sent at the pause's end too.
  await createContact(orgId, "Waiting");
  const log = platform.delivery.client(DeliveryService);
  const owner = { organisationId: orgId, clientId: app.id };
  const pending = await waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId: BigInt(throttled.id), pageSize: 100 });
      return deliveries.length === 2 ? deliveries : undefined;
    },
    10_000,
    "the second delivery",
  );
  expect(Date.now(), "read during the pause").toBeLessThan(pauseEnd - 200);
  for (const d of pending) {
    expect(d.status).toBe("pending");
    expect(timestampDate(d.nextAttemptTime!).toISOString()).toBe(shown);
  }

  // Both POSTs come at the pause's end, not before; then throttled_until is null.
  await waitFor(() => (route.requests.length >= 3 ? true : undefined), 20_000, "the POSTs after the pause");
  for (const r of route.requests.slice(1)) expect(r.at).toBeGreaterThanOrEqual(pauseEnd - SLACK_MS);
  const after = await getOne(throttled.id);
  expect(after).toMatchObject({ throttled_until: null, blocked_since: null, blocked_delivery_id: null });
  expect((await listed()).find((s) => s.id === throttled.id)).toMatchObject({ throttled_until: null });
});

it("in_flight_cap shows the cap a 503 without Retry-After lowered (here from 1, its floor), on GET and in the list, and null after a success", async () => {
  let overloaded = true;
  const route = receiver.route("/overloaded-state", () => (overloaded ? { status: 503 } : { status: 200 }));
  const subscription = await subscribe(app, route.url);
  expect(await getOne(subscription.id)).toMatchObject({ throttled_until: null, in_flight_cap: null });

  await createContact(orgId, "Overloaded");
  await waitFor(() => route.requests[0], 20_000, "the POST answered 503");
  // Answered 503 until the test has seen the lowered cap: every retry keeps it lowered.
  await waitFor(
    async () => ((await getOne(subscription.id)).in_flight_cap === 1 ? true : undefined),
    10_000,
    "in_flight_cap on GET",
  );
  expect((await listed()).find((s) => s.id === subscription.id)).toMatchObject({
    in_flight_cap: 1,
    throttled_until: null,
  });

  overloaded = false;
  await waitFor(
    async () => ((await attempts(app, subscription.id))[0]?.outcome === "succeeded" ? true : undefined),
    20_000,
    "the retry that succeeds",
  );
  expect(await getOne(subscription.id)).toMatchObject({ in_flight_cap: null, throttled_until: null });
});
