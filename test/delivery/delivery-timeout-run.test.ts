// A run of timeouts throttles like a 503 without Retry-After: a target that
// stops answering has its subscription's in-flight cap halved (at least 1),
// once per wave (the POSTs in flight when it was halved time out together),
// and each success grows it back by one, up to
// WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION (a simple AIMD). The delivery
// service's state of the subscription shows the lowered cap meanwhile. The
// same wave answered 503 without Retry-After, its answers recorded apart,
// halves the cap once too.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { TIMEOUT_RUN_HALVES_CAP } from "../../services/delivery/deliveries/subscription-pause.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const TOKEN = "f".repeat(40);
const CAP = 4;
const TIMEOUT_MS = 600;
const HOLD_MS = 500;
const MARGIN_MS = 150;
const OVERLOAD_STEP_MS = 80;

/** A request as the receiver saw it: when it came, how many (itself included) were open then, whether it was left hanging. */
interface Arrival {
  at: number;
  open: number;
  hung: boolean;
  /** Answered 429 with Retry-After. */
  paused: boolean;
}

let platform: Platform;
let server: http.Server;
/**
 * Per path: the first half second's requests are answered 429 with Retry-After: 1 (the queue builds up meanwhile); the next `hang` are
 * never answered (the sender's timeout ends them); the next `overloaded` get 503 without Retry-After, one after the other;
 * the rest get 200 after HOLD_MS.
 */
const routes = new Map<
  string,
  { hang: number; overloaded: number; arrivals: Arrival[]; answering: number; firstAt?: number }
>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    const route = routes.get(req.url ?? "");
    if (!route) return void res.writeHead(404).end();
    const now = Date.now();
    // The requests of the first half second are answered 429 with Retry-After: 1, so the subscription's queue builds up
    // and the hung ones are sent together when the pause ends.
    route.firstAt ??= now;
    if (now < route.firstAt + 500) {
      route.arrivals.push({ at: now, open: 0, hung: false, paused: true });
      return void res.writeHead(429, { "retry-after": "1" }).end();
    }
    const i = route.arrivals.filter((a) => !a.paused).length;
    const hung = i < route.hang;
    // Open: the answered ones not yet answered, and the hung ones whose POST has not timed out yet: the sender gives up
    // DELIVERY_TIMEOUT_MS after it sent, a little before they came here (less a margin for a loaded machine's
    // connecting); whatever their connection does after, they are over.
    const hanging = route.arrivals.filter((a) => a.hung && a.at + TIMEOUT_MS - MARGIN_MS > now).length;
    if (!hung) route.answering++;
    route.arrivals.push({ at: now, open: route.answering + hanging + (hung ? 1 : 0), hung, paused: false });
    if (hung) return;
    // The overloaded ones: 503 without Retry-After, each answered OVERLOAD_STEP_MS after the one before (recorded apart).
    const overloaded = i - route.hang < route.overloaded;
    setTimeout(
      () => {
        route.answering--;
        res.writeHead(overloaded ? 503 : 200).end();
      },
      overloaded ? HOLD_MS + (i - route.hang) * OVERLOAD_STEP_MS : HOLD_MS,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
      DELIVERY_CLAIM_LEASE_SECONDS: "10",
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2,0.2,0.2,0.2",
      DELIVERY_POLL_MS: "50",
      WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(CAP),
    },
    webhook: true,
    delivery: true,
  });
});

afterAll(async () => {
  await platform?.stop();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

async function subscribeWithQueue(name: string, answers: { hang?: number; overloaded?: number }, count: number) {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name,
    ownerEmail: `${randomUUID()}@timeouts.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const path = `/timeouts/${randomUUID()}`;
  const route = {
    hang: answers.hang ?? 0,
    overloaded: answers.overloaded ?? 0,
    arrivals: [] as Arrival[],
    answering: 0,
  };
  routes.set(path, route);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: url, eventType: EventType.CONTACT_CREATED });
  for (let i = 0; i < count; i++)
    await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `${name}${i}` } });
  return { owner, subscriptionId: subscription!.id, all: route.arrivals };
}

const states = async (owner: Owner, subscriptionId: bigint) =>
  (await platform.delivery.client(DeliveryService).getDeliveryStates({ owner, subscriptionIds: [subscriptionId] }))
    .states;

/** The delivery service's state of the subscription, read again and again while `work` runs: the lowered caps it showed. */
async function watchStates(
  owner: Owner,
  subscriptionId: bigint,
  work: () => Promise<void>,
): Promise<{ cap: number; paused: boolean }[]> {
  const shown: { cap: number; paused: boolean }[] = [];
  let watching = true;
  const watch = (async () => {
    while (watching) {
      for (const s of await states(owner, subscriptionId))
        shown.push({ cap: s.inFlightCap, paused: s.throttledUntil !== undefined });
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    await work();
  } finally {
    watching = false;
    await watch;
  }
  return shown;
}

async function allSucceeded(owner: Owner, subscriptionId: bigint, count: number) {
  const log = platform.delivery.client(DeliveryService);
  await waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId, pageSize: 100 });
      return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
    },
    60_000,
    "every delivery",
  );
}

it(`a run of ${TIMEOUT_RUN_HALVES_CAP} timeouts halves the subscription's in-flight cap once, and successes grow it back`, async () => {
  const count = 16;
  const { owner, subscriptionId, all } = await subscribeWithQueue("Hanging", { hang: CAP }, count);
  const shown = await watchStates(owner, subscriptionId, () => allSucceeded(owner, subscriptionId, count));
  // Halved once (to 2, never 1: the four timeouts are one wave), then grown back by one per success; never paused.
  const lowered = shown.filter((s) => s.cap > 0);
  expect(Math.min(...lowered.map((s) => s.cap))).toBe(CAP / 2);
  expect(
    lowered.some((s) => s.paused),
    "a run of timeouts does not pause the subscription",
  ).toBe(false);

  // After the 429s' pause (the queue built up meanwhile):
  expect(all[0]!.paused).toBe(true);
  const arrivals = all.filter((a) => !a.paused);

  // The cap's worth hung, all at once.
  expect(arrivals.slice(0, CAP).every((a) => a.hung)).toBe(true);
  expect(Math.max(...arrivals.slice(0, CAP).map((a) => a.open))).toBe(CAP);
  const after = arrivals.slice(CAP);
  expect(after).toHaveLength(count);
  // Once they timed out, at most half the cap is sent before an answer frees a slot (the configured cap would send 4 at once).
  const firstWave = after.filter((a) => a.at < after[0]!.at + HOLD_MS - 50);
  expect(firstWave.length).toBeLessThanOrEqual(CAP / 2);
  expect(Math.max(...firstWave.map((a) => a.open))).toBeLessThanOrEqual(CAP / 2);
  // Each success adds one back: the cap is reached again, never passed; and the state shows no lowered cap any more.
  expect(Math.max(...after.map((a) => a.open))).toBe(CAP);
  expect(await states(owner, subscriptionId)).toEqual([]);
});

it(`fewer than ${TIMEOUT_RUN_HALVES_CAP} timeouts in a row leave the cap as it is`, async () => {
  const count = 12;
  const { owner, subscriptionId, all } = await subscribeWithQueue(
    "Slow once",
    { hang: TIMEOUT_RUN_HALVES_CAP - 1 },
    count,
  );
  await allSucceeded(owner, subscriptionId, count);
  const arrivals = all.filter((a) => !a.paused);
  expect(arrivals.filter((a) => a.hung)).toHaveLength(TIMEOUT_RUN_HALVES_CAP - 1);
  // The answered POSTs ended the run: the cap was never lowered, its full worth is open at once again after the timeouts.
  const lastHung = arrivals.findLast((a) => a.hung)!;
  const later = arrivals.filter((a) => a.at > lastHung.at + TIMEOUT_MS);
  expect(later.length).toBeGreaterThan(CAP);
  expect(Math.max(...later.map((a) => a.open))).toBe(CAP);
  expect(await states(owner, subscriptionId)).toEqual([]);
});

it("503s without Retry-After answered to one wave, recorded apart, halve the cap once (not again within DELIVERY_TIMEOUT_MS)", async () => {
  const count = 12;
  const { owner, subscriptionId, all } = await subscribeWithQueue("Overloaded apart", { overloaded: CAP }, count);
  const shown = await watchStates(owner, subscriptionId, () => allSucceeded(owner, subscriptionId, count));
  const arrivals = all.filter((a) => !a.paused);
  // The cap's worth went at once, and was answered 503 one after the other, OVERLOAD_STEP_MS apart.
  expect(Math.max(...arrivals.slice(0, CAP).map((a) => a.open))).toBe(CAP);
  expect(arrivals.slice(CAP)).toHaveLength(count);
  // Halved once, to 2; a halving per answer would have come down to 1.
  const lowered = shown.filter((s) => s.cap > 0);
  expect(Math.min(...lowered.map((s) => s.cap))).toBe(CAP / 2);
  expect(await states(owner, subscriptionId)).toEqual([]);
});
