// Delivery resolves a target's name through the same DNS servers as the
// save-time check (WEBHOOK_DNS_SERVERS). The name below exists only in this
// test's DNS server, which answers it with 127.0.0.1; insecure targets are
// allowed so that loopback may be reached. The POST arriving at the loopback
// receiver proves the delivery asked that server.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { TestDnsServer } from "../support/dns-server.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const NAME = `receiver-${randomUUID().slice(0, 8)}.dns-only.test`;

let dns: TestDnsServer;
let receiver: Receiver;
let platform: Platform;

beforeAll(async () => {
  dns = await TestDnsServer.start({ [NAME]: { A: ["127.0.0.1"] } });
  receiver = await startReceiver();
  // No resolver injected: each service builds its own from the configuration, as in production.
  platform = await startPlatform({
    token: "n".repeat(40),
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      WEBHOOK_DNS_SERVERS: dns.address,
      WEBHOOK_DNS_TIMEOUT_MS: "1000",
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2",
      DELIVERY_POLL_MS: "50",
    },
    webhook: true,
    delivery: true,
  });
});

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
  await dns?.close();
});

it("a name known only to WEBHOOK_DNS_SERVERS is delivered to the address that server gives", async () => {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Dns",
    ownerEmail: `${randomUUID()}@dns.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route(`/hooks/${randomUUID()}`);
  const targetUrl = `http://${NAME}:${new URL(receiver.base).port}${new URL(route.url).pathname}`;
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED });
  expect(subscription!.targetUrl).toBe(targetUrl);

  await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: "Ada" } });
  const [request] = await waitFor(
    () => (route.requests.length ? route.requests : undefined),
    15_000,
    "the POST at the loopback receiver",
  );
  expect(request!.headers.host).toBe(`${NAME}:${new URL(receiver.base).port}`);
  expect(JSON.parse(request!.body)).toMatchObject({ type: "contact.created" });
  expect(dns.asked).toContain(`${NAME}/A`);

  const attempts = await waitFor(
    async () => {
      const res = await platform.delivery
        .client(DeliveryService)
        .listDeliveryAttempts({ owner, subscriptionId: subscription!.id });
      return res.attempts.length ? res.attempts : undefined;
    },
    10_000,
    "the attempt recorded",
  );
  expect(attempts[0]).toMatchObject({ outcome: "succeeded", responseStatus: 200 });
});
