// The noisy neighbour: one owner's target hangs with a queue of events behind
// it, and another owner's events still arrive at their usual pace. Each
// subscription holds at most WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION (default
// 4) of the worker's slots, and claims go round the owners with due work.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startCountingReceiver, type CountedRoute, type CountingReceiver } from "../support/counting-receiver.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const TOKEN = "n".repeat(40);
const TIMEOUT_MS = 6000;
const QUEUED = 50;
const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
  DELIVERY_RETRY_SCHEDULE_SECONDS: "60",
  DELIVERY_POLL_MS: "500",
  // Few slots: without the per-subscription cap the hanging target would take them all.
  DELIVERY_CONCURRENCY: "8",
};

let platform: Platform;
let receiver: CountingReceiver;

beforeAll(async () => {
  receiver = await startCountingReceiver();
  platform = await startPlatform({ token: TOKEN, config: shared, webhook: true, delivery: true });
});

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

async function subscribe(name: string, hold: number | "hang") {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name,
    ownerEmail: `${randomUUID()}@noisy.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: `app-${randomUUID().slice(0, 8)}` } as Owner;
  const route = receiver.route(`/noisy/${randomUUID()}`, hold);
  await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  const contact = (firstName: string) =>
    orgs.createContact({ organisationId: owner.organisationId, fields: { firstName } });
  return { route, contact };
}

/**
 * One owner queues QUEUED events for its target (answering at once, or
 * never); then another owner makes five events one after the other, each when
 * the last has arrived. Returns how long each of those took to arrive.
 */
async function run(neighbour: number | "hang"): Promise<{ latencies: number[]; noisy: CountedRoute }> {
  const noisy = await subscribe(`Noisy${neighbour}`, neighbour);
  for (let i = 0; i < QUEUED; i++) await noisy.contact(`Queued${i}`);
  await waitFor(() => (noisy.route.arrivals.length >= 4 ? true : undefined), 15_000, "the neighbour's first POSTs");
  const quiet = await subscribe(`Quiet${neighbour}`, 0);
  const latencies: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = Date.now();
    await quiet.contact(`Quiet${i}`);
    await waitFor(
      () => (quiet.route.arrivals.length === i + 1 ? true : undefined),
      20_000,
      `the quiet owner's event ${i}`,
    );
    latencies.push(quiet.route.arrivals[i]! - started);
  }
  return { latencies, noisy: noisy.route };
}

it("a hanging target with a queue delays only its own subscription: another owner's events arrive at their usual pace", async () => {
  const usual = await run(0);
  const { latencies, noisy } = await run("hang");
  const usualWorst = Math.max(...usual.latencies);
  // A generous bound against the same run without the hanging target; and
  // well under the POST timeout, so no event waited for a hanging POST's slot.
  for (const ms of latencies) {
    expect(ms).toBeLessThan(Math.max(usualWorst * 4, usualWorst + 3000));
    expect(ms).toBeLessThan(TIMEOUT_MS - 1000);
  }
  // The hanging target never had more than the default cap of the eight slots.
  expect(noisy.maxOpen).toBe(4);
  expect(noisy.arrivals.length).toBeLessThan(QUEUED);
});
