// The embedded start's bus (in-process, as `npm start` without NATS_URL):
// the organisation's outbox relay runs the delivery fan-out inside publish,
// and the fan-out only writes rows, so a subscriber that never answers does
// not delay another subscriber's deliveries nor the events behind it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { uniqueName } from "../support/backends.js";
import {
  createOrganisationApp,
  createWebhookApp,
  startPlatform,
  type Platform,
  type StartedService,
} from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const TOKEN = "e".repeat(40);
const env = {
  NATS_URL: "",
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "8000",
  DELIVERY_CLAIM_LEASE_SECONDS: "20",
  DELIVERY_POLL_MS: "50",
};
const subjectPrefix = uniqueName("t");

let platform: Platform;
let bus: InProcessBus;
let receiver: Receiver;
const started: StartedService<ServiceApp>[] = [];

beforeAll(async () => {
  bus = new InProcessBus(subjectPrefix);
  receiver = await startReceiver();
  // Consumers first, publishers last, as scripts/start.ts does.
  platform = await startPlatform({
    token: TOKEN,
    config: { ...env, NATS_SUBJECT_PREFIX: subjectPrefix },
    bus,
    organisation: false,
    webhook: { create: (deps) => createWebhookApp(deps, { consumeGrantRevoked: false }) },
    delivery: true,
  });
  const organisation = await platform.startService(createOrganisationApp);
  started.push(organisation, platform.delivery, platform.webhook);
});

afterAll(async () => {
  // The receiver first: the hanging POST ends now rather than at its timeout.
  await receiver?.close();
  await platform?.stop();
  await bus?.close();
});

it("a subscriber that never answers does not delay another one's deliveries", async () => {
  const [organisation, delivery, webhook] = started as [
    StartedService<ServiceApp>,
    StartedService<ServiceApp>,
    StartedService<ServiceApp>,
  ];
  const org = await organisation.client(OrganisationService).createOrganisation({
    name: "Embedded",
    ownerEmail: `${randomUUID()}@embedded.test`,
    ownerPassword: "correct horse",
  });
  const organisationId = org.organisation!.id;
  const hanging = receiver.route("/hang", () => "hang");
  const healthy = receiver.route("/ok");
  const hooks = webhook.client(WebhookService);
  const slowOwner = { organisationId, clientId: "slow-app" } as Owner;
  const fastOwner = { organisationId, clientId: "fast-app" } as Owner;
  await hooks.createSubscription({ owner: slowOwner, targetUrl: hanging.url, eventType: EventType.CONTACT_CREATED });
  const fast = await hooks.createSubscription({
    owner: fastOwner,
    targetUrl: healthy.url,
    eventType: EventType.CONTACT_CREATED,
  });

  const orgs = organisation.client(OrganisationService);
  const t0 = Date.now();
  for (let i = 0; i < 5; i++) await orgs.createContact({ organisationId, fields: { firstName: `Fast${i}` } });
  await waitFor(() => healthy.requests.length === 5, 15_000, "the healthy subscriber's deliveries");
  // Well before the hanging target's first attempt times out (8 s).
  expect(Date.now() - t0).toBeLessThan(6000);
  expect(healthy.requests.map((r) => JSON.parse(r.body).data.first_name)).toEqual([
    "Fast0",
    "Fast1",
    "Fast2",
    "Fast3",
    "Fast4",
  ]);
  // The receiver has the fifth POST before the worker records its answer:
  // wait for that write (moments later), not for the hanging target.
  const listed = () =>
    delivery.client(DeliveryService).listDeliveries({ owner: fastOwner, subscriptionId: fast.subscription!.id });
  await waitFor(
    async () => (await listed()).deliveries.every((d) => d.status === "succeeded") || undefined,
    5_000,
    "the fast deliveries recorded",
  );
  const { deliveries } = await listed();
  expect(deliveries.map((d) => d.status)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded", "succeeded"]);
  expect(hanging.requests.length).toBeGreaterThan(0);
});
