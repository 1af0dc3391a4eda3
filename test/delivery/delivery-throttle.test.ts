// Throttling by the target: a 429 (or 502, 503, 504) answer with Retry-After
// pauses the whole subscription until then, capped at
// DELIVERY_RETRY_AFTER_MAX_SECONDS: no POST of any of its deliveries before
// the pause ends, then all of them; the owner's other subscriptions are sent
// meanwhile. Other answers (a 500 with Retry-After) delay only their delivery.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Answer, type Receiver } from "../support/receiver.js";

const TOKEN = "f".repeat(40);
const RETRY_AFTER_MAX_SECONDS = 3;
// Same machine, one clock: the database's now(), the worker's and the receiver's Date.now() agree to within this.
const SLACK_MS = 50;

let platform: Platform;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_TIMEOUT_MS: "2000",
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2,0.2,0.2,0.2",
      DELIVERY_RETRY_AFTER_MAX_SECONDS: String(RETRY_AFTER_MAX_SECONDS),
      DELIVERY_POLL_MS: "50",
      // One POST at a time per subscription: each POST after the first is sent after the first's answer.
      WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "1",
    },
    webhook: true,
    delivery: true,
  });
});

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

async function organisation(name: string) {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name,
    ownerEmail: `${randomUUID()}@throttle.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const contacts = async (n: number) => {
    for (let i = 0; i < n; i++)
      await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `${name}${i}` } });
  };
  const subscribe = async (answer: (n: number) => Answer) => {
    const route = receiver.route(`/throttle/${randomUUID()}`, answer);
    const { subscription } = await platform.webhook
      .client(WebhookService)
      .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
    return { route, subscription: subscription! };
  };
  return { owner, contacts, subscribe };
}

/** The first request answered `first`, every later one 200. */
const firstAnswered = (first: Answer) => (n: number) => (n === 1 ? first : { status: 200 });

/** Every delivery of the subscription succeeded, and the receiver got each event. */
async function allSucceeded(owner: Owner, subscriptionId: bigint, count: number) {
  const log = platform.delivery.client(DeliveryService);
  return waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId, pageSize: 100 });
      return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? deliveries : undefined;
    },
    20_000,
    "every delivery succeeded",
  );
}

it("a 429 with Retry-After pauses the whole subscription until then; the owner's other subscription keeps receiving", async () => {
  const org = await organisation("Throttled");
  const throttled = await org.subscribe(firstAnswered({ status: 429, headers: { "retry-after": "2" } }));
  const other = await org.subscribe(() => ({ status: 200 }));
  await org.contacts(4);
  const [first] = await waitFor(
    () => (throttled.route.requests.length >= 1 ? throttled.route.requests : undefined),
    15_000,
    "the first POST",
  );
  const pausedAt = first!.at;
  // Events that come during the pause: the other subscription gets them at once.
  await org.contacts(2);
  await waitFor(() => (other.route.requests.length === 6 ? true : undefined), 15_000, "the other subscription's POSTs");
  expect(other.route.requests.at(-1)!.at).toBeLessThan(pausedAt + 2000);
  expect(throttled.route.requests).toHaveLength(1);

  await allSucceeded(org.owner, throttled.subscription.id, 6);
  const later = throttled.route.requests.slice(1);
  // The answered-429 event again, and the five others.
  expect(later).toHaveLength(6);
  for (const r of later) expect(r.at).toBeGreaterThanOrEqual(pausedAt + 2000 - SLACK_MS);
  const ids = new Set(throttled.route.requests.map((r) => r.headers["webhook-id"]));
  expect(ids.size).toBe(6);
  expect(later.map((r) => r.headers["webhook-id"])).toContain(first!.headers["webhook-id"]);
});

it("a 503's Retry-After pauses the subscription at most DELIVERY_RETRY_AFTER_MAX_SECONDS", async () => {
  const org = await organisation("Unavailable");
  const throttled = await org.subscribe(firstAnswered({ status: 503, headers: { "retry-after": "3600" } }));
  await org.contacts(3);
  const [first] = await waitFor(
    () => (throttled.route.requests.length >= 1 ? throttled.route.requests : undefined),
    15_000,
    "the first POST",
  );
  await allSucceeded(org.owner, throttled.subscription.id, 3);
  const later = throttled.route.requests.slice(1);
  expect(later).toHaveLength(3);
  for (const r of later) {
    expect(r.at).toBeGreaterThanOrEqual(first!.at + RETRY_AFTER_MAX_SECONDS * 1000 - SLACK_MS);
    // The cap, not the hour asked for (and the poll, a claim, a POST).
    expect(r.at).toBeLessThan(first!.at + RETRY_AFTER_MAX_SECONDS * 1000 + 5000);
  }
});

it("a 500 with Retry-After delays only its own delivery: the subscription's others are sent meanwhile", async () => {
  const org = await organisation("Failing");
  const failing = await org.subscribe(firstAnswered({ status: 500, headers: { "retry-after": "2" } }));
  await org.contacts(3);
  const [first] = await waitFor(
    () => (failing.route.requests.length >= 3 ? failing.route.requests : undefined),
    15_000,
    "the other POSTs",
  );
  const failedId = first!.headers["webhook-id"];
  const others = failing.route.requests.slice(1, 3);
  for (const r of others) {
    expect(r.headers["webhook-id"]).not.toBe(failedId);
    expect(r.at).toBeLessThan(first!.at + 2000);
  }
  await allSucceeded(org.owner, failing.subscription.id, 3);
  const retried = failing.route.requests.find((r, i) => i > 0 && r.headers["webhook-id"] === failedId);
  // The one delivery still waits as it was asked.
  expect(retried!.at).toBeGreaterThanOrEqual(first!.at + 2000 - SLACK_MS);
});
