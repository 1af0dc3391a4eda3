// Ordered delivery across processes: two delivery processes (services/delivery/main.ts),
// each fanning out (one durable consumer shared by both) AND delivering, on one database
// and one stream. An ordered subscription gets its events one at a time, in the order
// they are in the stream (the outbox's commit order), though either process may record
// an event and either may send it; a head that fails waits on its retry schedule and
// holds back the ones behind it; when it gives up, the next goes. An unordered
// subscription of the same owner is not held back by the blocked ordered one.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { freePort, httpReady, spawnTs, waitFor, type Spawned } from "../support/processes.js";
import { startReceiver, type Answer, type Received, type Receiver } from "../support/receiver.js";
import { readStream } from "../support/stream.js";

const TOKEN = "q".repeat(40);
// Nine attempts a second or so apart: a head that never succeeds blocks its subscription for about 8 s.
const SCHEDULE = "1,1,1,1,1,1,1,1";
const settings = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "5000",
  DELIVERY_POLL_MS: "100",
  DELIVERY_CONCURRENCY: "8",
  DELIVERY_RETRY_SCHEDULE_SECONDS: SCHEDULE,
};

let platform: Platform;
let receiver: Receiver;
const processes: Spawned[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  // The platform's own delivery service only answers the delivery log: the two processes fan out and send.
  platform = await startPlatform({
    token: TOKEN,
    sessions: "many",
    config: settings,
    webhook: true,
    delivery: { create: (deps) => createDeliveryApp(deps, { workers: false, fanOut: false }) },
  });
  expect(platform.config.NATS_URL, "ordered delivery across fan-out processes needs NATS").toBeTruthy();
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const spawned = spawnTs("services/delivery/main.ts", {
      ...settings,
      DATABASE_URL: platform.db.url,
      DATABASE_POOL_MAX: "3",
      MIGRATE_ON_START: "false",
      NATS_URL: platform.config.NATS_URL,
      NATS_STREAM: platform.config.NATS_STREAM,
      NATS_SUBJECT_PREFIX: platform.config.NATS_SUBJECT_PREFIX,
      INTERNAL_RPC_TOKEN: TOKEN,
      WEBHOOK_RPC_URL: platform.webhook.server.url,
      RPC_HOST: "127.0.0.1",
      DELIVERY_RPC_PORT: String(port),
      LOG_LEVEL: "warn",
    });
    processes.push(spawned);
    await httpReady(`http://127.0.0.1:${port}/readyz`, 60_000, spawned);
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  await platform?.stop();
  await receiver?.close();
});

const eventIdOf = (r: Received) => String(r.headers["webhook-id"]).toLowerCase();

/** A route whose first event (the first to arrive) is answered 500 `failures` times, everything else 200. */
function failingHead(path: string, failures: number): { url: string; requests: Received[] } {
  let route: { url: string; requests: Received[] } | undefined;
  const answer = (n: number): Answer => {
    const requests = route!.requests;
    const head = eventIdOf(requests[0]!);
    const tries = requests.slice(0, n).filter((r) => eventIdOf(r) === head).length;
    return eventIdOf(requests[n - 1]!) === head && tries <= failures ? { status: 500 } : { status: 200 };
  };
  route = receiver.route(path, answer);
  return route;
}

async function newOwner(name: string): Promise<Owner> {
  const org = await platform.organisation
    .client(OrganisationService)
    .createOrganisation({ name, ownerEmail: `${randomUUID()}@ordered.test`, ownerPassword: "correct horse" });
  return { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
}

/** `count` contacts, created in parallel bursts of 5 (so that the two fan-outs' batches interleave). */
async function createContacts(owner: Owner, prefix: string, count: number): Promise<void> {
  const orgs = platform.organisation.client(OrganisationService);
  for (let i = 0; i < count; i += 5) {
    await Promise.all(
      Array.from({ length: Math.min(5, count - i) }, (_, k) =>
        orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `${prefix}${i + k}` } }),
      ),
    );
  }
}

/** The owner's events in stream order: the outbox's commit order, as the relay published it. */
async function streamOrder(owner: Owner): Promise<string[]> {
  const stored = await readStream(platform.config.NATS_URL!, platform.config.NATS_STREAM);
  return stored
    .filter((s) => s.event.organisationId.toLowerCase() === owner.organisationId.toLowerCase())
    .map((s) => s.event.eventId.toLowerCase());
}

async function deliveries(owner: Owner, subscriptionId: bigint) {
  return (await platform.delivery.client(DeliveryService).listDeliveries({ owner, subscriptionId, pageSize: 100 }))
    .deliveries;
}

it("sends an ordered subscription's events one at a time in commit order, a head failing twice holding back the rest, nothing skipped or twice", async () => {
  const owner = await newOwner("Ordered");
  const route = failingHead(`/ordered/${randomUUID()}`, 2);
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED, ordered: true });
  const count = 20;
  await createContacts(owner, "Ordered", count);

  await waitFor(
    async () => {
      const rows = await deliveries(owner, subscription!.id);
      return rows.length === count && rows.every((d) => d.status === "succeeded") ? true : undefined;
    },
    60_000,
    "every ordered delivery succeeded",
  );
  const order = await streamOrder(owner);
  expect(order).toHaveLength(count);
  // What reached the receiver, in arrival order: the head twice answered 500, then every event once, in commit order.
  expect(route.requests.map(eventIdOf)).toEqual([order[0], order[0], ...order]);
  // Each event once as a 200: the two 500s were the head's only other POSTs.
  const succeeded = route.requests.slice(2);
  expect(new Set(succeeded.map(eventIdOf)).size).toBe(count);
  for (const w of processes) expect(w.child.exitCode, w.output()).toBeNull();
}, 120_000);

it("a blocked ordered subscription holds back only itself: the owner's unordered one gets every event meanwhile, and the rest follow in order once the head gave up", async () => {
  const owner = await newOwner("Blocked");
  // The ordered subscription's head fails on every attempt: it gives up after the whole schedule.
  const ordered = failingHead(`/blocked/${randomUUID()}`, 1_000);
  const unordered = receiver.route(`/unordered/${randomUUID()}`);
  const webhook = platform.webhook.client(WebhookService);
  const { subscription: orderedSub } = await webhook.createSubscription({
    owner,
    targetUrl: ordered.url,
    eventType: EventType.CONTACT_CREATED,
    ordered: true,
  });
  await webhook.createSubscription({ owner, targetUrl: unordered.url, eventType: EventType.CONTACT_CREATED });
  const count = 10;
  await createContacts(owner, "Blocked", count);

  const order = await waitFor(async () => {
    const o = await streamOrder(owner);
    return o.length === count ? o : undefined;
  });
  // Every event reaches the unordered subscription while the ordered one is still on its head.
  await waitFor(
    () => (new Set(unordered.requests.map(eventIdOf)).size === count ? true : undefined),
    30_000,
    "every unordered event",
  );
  const lastUnordered = Math.max(...unordered.requests.map((r) => r.at));
  const behindHead = ordered.requests.filter((r) => eventIdOf(r) !== order[0]);
  expect(behindHead.every((r) => r.at > lastUnordered)).toBe(true);
  expect(ordered.requests.length).toBeGreaterThanOrEqual(1);
  expect(eventIdOf(ordered.requests[0]!)).toBe(order[0]);

  // The head gives up after its schedule; then the others go, in order, each once.
  const attempts = SCHEDULE.split(",").length + 1;
  await waitFor(
    async () => {
      const rows = await deliveries(owner, orderedSub!.id);
      return rows.length === count && rows.filter((d) => d.status === "succeeded").length === count - 1
        ? rows
        : undefined;
    },
    60_000,
    "the head gave up, the rest succeeded",
  );
  const rows = await deliveries(owner, orderedSub!.id);
  expect(rows.find((d) => d.eventId.toLowerCase() === order[0])?.status).toBe("gave_up");
  expect(ordered.requests.map(eventIdOf)).toEqual([
    ...Array.from({ length: attempts }, () => order[0]),
    ...order.slice(1),
  ]);
}, 120_000);

it("keeps commit order while events keep coming and the two fan-outs record their batches out of order (the fan-out's watermark)", async () => {
  const owner = await newOwner("Streaming");
  const route = receiver.route(`/streaming/${randomUUID()}`);
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED, ordered: true });
  const count = 40;
  await createContacts(owner, "Streaming", count);

  await waitFor(
    async () => {
      const rows = await deliveries(owner, subscription!.id);
      return rows.length === count && rows.every((d) => d.status === "succeeded") ? true : undefined;
    },
    60_000,
    "every ordered delivery succeeded",
  );
  expect(route.requests.map(eventIdOf)).toEqual(await streamOrder(owner));
}, 120_000);
