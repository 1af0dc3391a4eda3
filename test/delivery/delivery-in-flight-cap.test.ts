// At most WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION POSTs are open to one
// subscription at once, however many delivery workers share the database:
// the cap is counted in PostgreSQL at each claim, not in one process.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startCountingReceiver, type CountingReceiver } from "../support/counting-receiver.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const TOKEN = "f".repeat(40);
const CAP = 3;
// Long enough for the metrics to be read while the hanging target's first POSTs are open.
const TIMEOUT_MS = 3000;
const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2,0.2,0.2,0.2",
  DELIVERY_POLL_MS: "50",
  // Each worker alone could open 8 at once; both together 16.
  DELIVERY_CONCURRENCY: "8",
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(CAP),
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
    ownerEmail: `${randomUUID()}@cap.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route(`/cap/${randomUUID()}`, hold);
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  const contacts = async (n: number) => {
    for (let i = 0; i < n; i++)
      await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `${name}${i}` } });
  };
  return { owner, route, subscription: subscription!, contacts };
}

it("two delivery workers on one database never have more than the cap open to one subscription, and send everything once", async () => {
  const second = await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
  try {
    const slow = await subscribe("Slow", 600);
    const count = 15;
    await slow.contacts(count);
    const log = platform.delivery.client(DeliveryService);
    await waitFor(
      async () => {
        const { deliveries } = await log.listDeliveries({
          owner: slow.owner,
          subscriptionId: slow.subscription.id,
          pageSize: 100,
        });
        return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
      },
      30_000,
      "every delivery",
    );
    expect(slow.route.maxOpen).toBe(CAP);
    const names = slow.route.bodies.map((b) => JSON.parse(b).data.first_name).sort();
    expect(names).toEqual(Array.from({ length: count }, (_, i) => `Slow${i}`).sort());
  } finally {
    await second.stop();
  }
});

it("a target that never answers holds only the cap, not the workers: another subscription is sent meanwhile", async () => {
  const second = await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
  try {
    const hanging = await subscribe("Hanging", "hang");
    await hanging.contacts(12);
    await waitFor(
      () => (hanging.route.arrivals.length >= CAP ? true : undefined),
      15_000,
      "the hanging target's first POSTs",
    );
    // Operators see it while they hang: the deliveries held in every process, and the subscription at its cap.
    const metrics = await waitFor(
      async () => {
        const text = await (await fetch(`${platform.delivery.server.url}/metrics`)).text();
        return /^webhook_subscriptions_at_in_flight_cap 1$/m.test(text) ? text : undefined;
      },
      TIMEOUT_MS - 500,
      "the subscription at its cap in the metrics",
    );
    expect(metrics).toMatch(new RegExp(`^webhook_deliveries_in_flight ${CAP}$`, "m"));
    expect(metrics).toContain("# TYPE webhook_subscriptions_at_in_flight_cap gauge\n");
    const quick = await subscribe("Quick", 0);
    await quick.contacts(4);
    await waitFor(() => (quick.route.bodies.length === 4 ? true : undefined), 15_000, "the other subscription's POSTs");
    // The hanging POSTs time out and are retried, never more than the cap at once (their run of timeouts
    // halves the subscription's cap: delivery-timeout-run.test.ts).
    await waitFor(
      () => (hanging.route.arrivals.length >= CAP + 2 ? true : undefined),
      20_000,
      "retries of the hanging target",
    );
    expect(hanging.route.maxOpen).toBe(CAP);
    expect(quick.route.maxOpen).toBeLessThanOrEqual(CAP);
  } finally {
    await second.stop();
  }
});
