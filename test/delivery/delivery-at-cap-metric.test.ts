// webhook_subscriptions_at_in_flight_cap counts a subscription against the
// cap the claim really gives it: 1 for an ordered subscription (one at a
// time), and a cap its target lowered (a 503 without Retry-After halves it),
// not only WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION. Seen as operators see it:
// the delivery service's /metrics, while the target holds its POSTs open.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Answer, type Receiver } from "../support/receiver.js";

const TOKEN = "m".repeat(40);
const CAP = 4;
// The hanging POSTs stay open for the whole file.
const TIMEOUT_MS = 60_000;

let platform: Platform;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
      DELIVERY_CLAIM_LEASE_SECONDS: String(TIMEOUT_MS / 1000 + 10),
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
      DELIVERY_POLL_MS: "50",
      WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(CAP),
    },
    webhook: true,
    delivery: true,
  });
}, 60_000);

afterAll(async () => {
  // The receiver first: its hanging POSTs end, and the workers stop without waiting out the timeout.
  await receiver?.close();
  await platform?.stop();
});

async function subscribe(name: string, ordered: boolean, answer: (n: number) => Answer) {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name,
    ownerEmail: `${randomUUID()}@metric.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route(`/metric/${randomUUID()}`, answer);
  await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED, ordered });
  const contacts = async (n: number) => {
    for (let i = 0; i < n; i++)
      await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `${name}${i}` } });
  };
  return { route, contacts };
}

/** The metrics once they show `atCap` subscriptions at their cap and `inFlight` deliveries held. */
async function metricsShowing(atCap: number, inFlight: number): Promise<string> {
  return waitFor(
    async () => {
      const text = await (await fetch(`${platform.delivery.server.url}/metrics`)).text();
      const shows =
        new RegExp(`^webhook_subscriptions_at_in_flight_cap ${atCap}$`, "m").test(text) &&
        new RegExp(`^webhook_deliveries_in_flight ${inFlight}$`, "m").test(text);
      return shows ? text : undefined;
    },
    20_000,
    `${atCap} subscription(s) at their cap, ${inFlight} in flight`,
  );
}

it("an ordered subscription with its one POST open is at its cap (1), not below a cap of 4", async () => {
  const ordered = await subscribe("Ordered", true, () => "hang");
  await ordered.contacts(3);
  await waitFor(() => (ordered.route.requests.length === 1 ? true : undefined), 20_000, "the head's POST");
  const metrics = await metricsShowing(1, 1);
  expect(metrics).toContain("# TYPE webhook_subscriptions_at_in_flight_cap gauge\n");
  expect(ordered.route.requests).toHaveLength(1);
});

it("a subscription whose cap a 503 halved (4 to 2) is at its cap with 2 POSTs open", async () => {
  // The first POST is answered 503 without Retry-After; every later one hangs.
  const lowered = await subscribe("Lowered", false, (n) => (n === 1 ? { status: 503 } : "hang"));
  await lowered.contacts(1);
  await waitFor(() => (lowered.route.requests.length >= 2 ? true : undefined), 20_000, "the 503 and its retry");
  await lowered.contacts(4);
  await waitFor(() => (lowered.route.requests.length >= 3 ? true : undefined), 20_000, "two POSTs open");
  // The ordered subscription's POST (the test before) still hangs: two subscriptions at their cap, 1 + 2 held.
  await metricsShowing(2, 3);
  expect(lowered.route.requests).toHaveLength(3);
});
