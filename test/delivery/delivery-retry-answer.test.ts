// A manual retry's answer says when the attempt really happens: its
// next_retry_at is when the receiver gets the POST (now), never the lease a
// worker's claim puts on the row (DELIVERY_CLAIM_LEASE_SECONDS, 10 s here),
// whether the worker takes the row right after the retry or already holds it.
import { beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/processes.js";
import type { Receiver } from "../support/receiver.js";
import {
  app,
  attempts,
  call,
  createContact,
  DELIVERY_KEYS,
  orgId,
  PATH,
  receiver,
  RFC3339,
  subscribe,
  type SubscriptionBody,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

// Answers slower than a test's requests take, well within the timeout.
const SLOW_MS = 1500;
const LEASE_MS = 10_000;
// Same machine, one clock; the database's now() and the test's Date.now() agree to within this.
const SLACK_MS = 250;

useDeliveryApiSuite({ DELIVERY_TIMEOUT_MS: "5000", DELIVERY_CLAIM_LEASE_SECONDS: String(LEASE_MS / 1000) });

interface DeliveryBody {
  id: number;
  status: string;
  attempts: number;
  next_retry_at: string | null;
}

async function retry(
  subscriptionId: number,
  deliveryId: number,
): Promise<{ body: DeliveryBody; sent: number; answered: number }> {
  const sent = Date.now();
  const res = await call(app, "POST", `${PATH}/${subscriptionId}/deliveries/${deliveryId}/retry`);
  const answered = Date.now();
  const body = (await res.json()) as DeliveryBody;
  expect(res.status, JSON.stringify(body)).toBe(202);
  expect(Object.keys(body).sort()).toEqual(DELIVERY_KEYS);
  return { body, sent, answered };
}

describe("a retry's next_retry_at", () => {
  let subscription: SubscriptionBody;
  let route: ReturnType<Receiver["route"]>;
  let deliveryId: number;

  beforeAll(async () => {
    // The first POST is answered at once; every later one slowly, so a worker holds the row for a while.
    route = receiver.route("/retry-answer", (n) => (n === 1 ? { status: 200 } : { status: 200, delayMs: SLOW_MS }));
    subscription = await subscribe(app, route.url);
    await createContact(orgId, "Honest");
    const [first] = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length === 1 ? list : undefined;
      },
      20_000,
      "the first delivery",
    );
    deliveryId = first!.delivery_id;
  });

  it("is now, and the receiver gets the POST then, not a claim's lease later (each of three retries)", async () => {
    for (let round = 1; round <= 3; round++) {
      const before = route.requests.length;
      const { body, sent, answered } = await retry(subscription.id, deliveryId);
      expect(body.status).toBe("pending");
      expect(body.attempts).toBe(round);
      expect(body.next_retry_at).toMatch(RFC3339);
      const at = Date.parse(body.next_retry_at!);
      expect(at, "next_retry_at is when the retry was taken").toBeGreaterThanOrEqual(sent - SLACK_MS);
      expect(at, "next_retry_at is not the claim's lease").toBeLessThanOrEqual(answered + SLACK_MS);
      const received = await waitFor(() => route.requests[before], 5_000, "the retried POST");
      expect(received.at - at, "the POST came when the answer said").toBeLessThan(1_000);
      expect(received.at).toBeGreaterThanOrEqual(at - SLACK_MS);
      // Its attempt in the log, then the next round.
      await waitFor(
        async () => (await attempts(app, subscription.id)).length === round + 1 || undefined,
        10_000,
        "the attempt in the log",
      );
    }
  });

  it("is now while a worker is already sending it: that attempt is the one, and it is in the log", async () => {
    const before = route.requests.length;
    const logged = (await attempts(app, subscription.id)).length;
    // Another retry, and while the receiver holds its POST, the owner asks again.
    await retry(subscription.id, deliveryId);
    const inFlight = await waitFor(() => route.requests[before], 5_000, "the POST under way");
    const { body, sent, answered } = await retry(subscription.id, deliveryId);
    expect(answered - inFlight.at, "asked while the receiver had not answered").toBeLessThan(SLOW_MS);
    expect(body.status).toBe("pending");
    const at = Date.parse(body.next_retry_at!);
    expect(at).toBeGreaterThanOrEqual(sent - SLACK_MS);
    expect(at, "not the claim's lease").toBeLessThanOrEqual(answered + SLACK_MS);
    expect(at - inFlight.at).toBeLessThan(LEASE_MS / 2);
    const list = await waitFor(
      async () => {
        const l = await attempts(app, subscription.id);
        return l.length === logged + 1 ? l : undefined;
      },
      10_000,
      "the attempt under way, in the log",
    );
    expect(list[0]).toMatchObject({
      delivery_id: deliveryId,
      outcome: "succeeded",
      status_code: 200,
      next_retry_at: null,
    });
    expect(Math.abs(Date.parse(list[0]!.attempted_at) - inFlight.at)).toBeLessThan(1_000);
  });

  it("the delivery after the attempt: succeeded, no next_retry_at (the retry route's shape)", async () => {
    const { body } = await retry(subscription.id, deliveryId);
    expect(body.status).toBe("pending");
    await waitFor(
      async () => ((await attempts(app, subscription.id))[0]?.attempt ?? 0) > body.attempts || undefined,
      10_000,
      "the attempt",
    );
    const list = await attempts(app, subscription.id);
    expect(list[0]).toMatchObject({
      delivery_id: deliveryId,
      attempt: body.attempts + 1,
      outcome: "succeeded",
      next_retry_at: null,
    });
  });
});
