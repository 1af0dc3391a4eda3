// The destination is checked again when the delivery connects (CONTRACT:
// "Checked on create and update, and again on every delivery (DNS
// rebinding)"): a name that resolved to a public address when the
// subscription was saved and resolves to 127.0.0.1 when the event is sent is
// refused at connect, nothing reaches the loopback listener, and the attempt
// is logged as refused. Strict settings (no insecure targets), so a stack of
// its own.
import { randomUUID } from "node:crypto";
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { createWebhookSender } from "../../services/delivery/sender/webhook-sender.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import type { Resolver } from "../../services/shared/net/dns-resolver.js";
import {
  createDeliveryApp,
  createWebhookApp,
  startPlatform,
  type Platform,
  type StartedService,
} from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const TOKEN = "s".repeat(40);
const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "false",
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2",
  DELIVERY_POLL_MS: "50",
};

// Save time: a public address. Delivery time: loopback (DNS rebinding).
const atSave: Resolver = async () => ["93.184.215.14"];
const lookups: string[] = [];
const atDelivery: Resolver = async (hostname) => {
  lookups.push(hostname);
  return hostname === "mixed.receiver.test" ? ["93.184.215.14", "10.0.0.7"] : ["127.0.0.1"];
};

let platform: Platform;
let organisation: StartedService<ServiceApp>;
let webhook: StartedService<ServiceApp>;
let delivery: StartedService<ServiceApp>;
let listener: net.Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  // What a rebinding attacker would reach: a loopback port that counts connections.
  listener = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as net.AddressInfo).port;
  platform = await startPlatform({
    token: TOKEN,
    config: shared,
    webhook: { create: (deps) => createWebhookApp(deps, { resolve: atSave }) },
    delivery: { create: (deps) => createDeliveryApp(deps, { resolve: atDelivery }) },
  });
  ({ organisation, webhook, delivery } = platform);
});

afterAll(async () => {
  await platform?.stop();
  await new Promise((resolve) => listener?.close(resolve));
});

it("a name that resolves to 127.0.0.1 at delivery time is refused at connect and logged as refused", async () => {
  const orgs = organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Rebind",
    ownerEmail: `${randomUUID()}@ssrf.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const { subscription } = await webhook.client(WebhookService).createSubscription({
    owner,
    targetUrl: `https://rebind.receiver.test:${port}/hook`,
    eventType: EventType.CONTACT_CREATED,
  });
  await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: "Eve" } });
  const log = delivery.client(DeliveryService);
  // The first attempt and the one retry of the schedule, both refused.
  const attempts = await waitFor(
    async () => {
      const res = await log.listDeliveryAttempts({ owner, subscriptionId: subscription!.id });
      return res.attempts.length === 2 ? res.attempts : undefined;
    },
    15_000,
    "two refused attempts",
  );
  for (const a of attempts) {
    expect(a.responseStatus).toBe(0);
    expect(a.error).toBe("refused: rebind.receiver.test: 127.0.0.1 is a loopback address");
  }
  expect(attempts.map((a) => a.outcome)).toEqual(["gave_up", "failed"]);
  expect(lookups).toContain("rebind.receiver.test");
  expect(connections).toBe(0);
  const { deliveries } = await log.listDeliveries({ owner, subscriptionId: subscription!.id });
  expect(deliveries[0]).toMatchObject({ status: "gave_up", attempts: 2 });
});

it("the sender refuses a name with any non-public address, a localhost name, a literal private IP, and http", async () => {
  const sender = createWebhookSender({ resolve: atDelivery, allowInsecure: false, timeoutMs: 2000 });
  try {
    const send = (url: string) =>
      sender.send({
        url,
        secret: `whsec_${Buffer.alloc(32, 1).toString("base64")}`,
        eventId: randomUUID(),
        body: "{}",
      });
    expect(await send(`https://mixed.receiver.test:${port}/`)).toMatchObject({
      ok: false,
      kind: "refused",
      status: 0,
      error: "refused: mixed.receiver.test: 10.0.0.7 is a private address",
    });
    expect(await send(`https://127.0.0.1:${port}/`)).toMatchObject({
      ok: false,
      kind: "refused",
      error: "refused: 127.0.0.1 is a loopback address",
    });
    expect(await send(`https://[::1]:${port}/`)).toMatchObject({ ok: false, kind: "refused" });
    expect(await send(`http://example.test:${port}/`)).toMatchObject({
      ok: false,
      kind: "refused",
      error: "refused: http: targets are not allowed",
    });
    // A localhost name, without a lookup (RFC 6761 §6.3).
    expect(await send(`https://api.localhost:${port}/`)).toMatchObject({
      ok: false,
      kind: "refused",
      error: "refused: api.localhost is a loopback name",
    });
    expect(lookups).not.toContain("api.localhost");
    expect(connections).toBe(0);
  } finally {
    await sender.close();
  }
});
