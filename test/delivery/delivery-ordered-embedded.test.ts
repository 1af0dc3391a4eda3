// Ordered delivery on the embedded start's bus (in-process, as `npm start`
// without NATS_URL): no stream sequence and no watermark, the fan-out records
// events one at a time in commit order, and the delivery id is the order. A
// head that fails twice holds back the events behind it; then each arrives
// once, in the order CreateContact returned.
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
import { startReceiver, type Received, type Receiver } from "../support/receiver.js";

const TOKEN = "o".repeat(40);
const env = {
  NATS_URL: "",
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "5000",
  DELIVERY_POLL_MS: "50",
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.5,0.5,0.5",
};
const subjectPrefix = uniqueName("t");

let platform: Platform;
let bus: InProcessBus;
let receiver: Receiver;
let organisation: StartedService<ServiceApp>;

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
  organisation = await platform.startService(createOrganisationApp);
});

afterAll(async () => {
  await receiver?.close();
  await platform?.stop();
  await bus?.close();
});

const firstName = (r: Received) => JSON.parse(r.body).data.first_name as string;

it("sends an ordered subscription's events one at a time in commit order, a head failing twice holding back the rest", async () => {
  const orgs = organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Embedded ordered",
    ownerEmail: `${randomUUID()}@ordered.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  // The first event's first two POSTs are answered 500.
  const route = receiver.route("/ordered", (n) => (n <= 2 ? { status: 500 } : { status: 200 }));
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED, ordered: true });
  const count = 8;
  const names = Array.from({ length: count }, (_, i) => `Ordered${i}`);
  for (const name of names)
    await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: name } });

  const log = platform.delivery.client(DeliveryService);
  await waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId: subscription!.id, pageSize: 100 });
      return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
    },
    30_000,
    "every ordered delivery succeeded",
  );
  expect(route.requests.map(firstName)).toEqual([names[0], names[0], ...names]);
  expect(route.requests.slice(0, 3).map((r) => r.headers["webhook-id"])).toEqual(
    Array(3).fill(route.requests[0]!.headers["webhook-id"]),
  );
});
