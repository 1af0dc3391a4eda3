// The in-flight cap holds across delivery PROCESSES: two delivery services,
// each its own process (services/delivery/main.ts) on one database, send to a
// slow target; never more than WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION POSTs
// are open to it at once, and every event arrives once.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startCountingReceiver, type CountingReceiver } from "../support/counting-receiver.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { NatsServer, freePort, httpReady, spawnTs, waitFor, type Spawned } from "../support/processes.js";

const TOKEN = "p".repeat(40);
const CAP = 2;
const settings = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "3000",
  DELIVERY_POLL_MS: "50",
  DELIVERY_CONCURRENCY: "8",
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: String(CAP),
};

let platform: Platform;
let receiver: CountingReceiver;
let privateNats: NatsServer | undefined;
const workers: Spawned[] = [];
const ports: number[] = [];

beforeAll(async () => {
  receiver = await startCountingReceiver();
  // The platform's own delivery service writes the rows (the fan-out) and sends nothing: the two processes do.
  platform = await startPlatform({
    token: TOKEN,
    sessions: "many",
    config: settings,
    webhook: true,
    delivery: { create: (deps) => createDeliveryApp(deps, { workers: false }) },
  });
  // A service process needs NATS; without the machine's, a private one (the processes' fan-out then has nothing to read).
  if (!platform.config.NATS_URL) privateNats = await NatsServer.start();
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    ports.push(port);
    const worker = spawnTs("services/delivery/main.ts", {
      ...settings,
      DATABASE_URL: platform.db.url,
      DATABASE_POOL_MAX: "2",
      MIGRATE_ON_START: "false",
      NATS_URL: platform.config.NATS_URL ?? privateNats!.url,
      NATS_STREAM: platform.config.NATS_STREAM,
      NATS_SUBJECT_PREFIX: platform.config.NATS_SUBJECT_PREFIX,
      INTERNAL_RPC_TOKEN: TOKEN,
      WEBHOOK_RPC_URL: platform.webhook.server.url,
      RPC_HOST: "127.0.0.1",
      DELIVERY_RPC_PORT: String(port),
      LOG_LEVEL: "warn",
    });
    workers.push(worker);
    await httpReady(`http://127.0.0.1:${port}/readyz`, 60_000, worker);
  }
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await platform?.stop();
  await privateNats?.close();
  await receiver?.close();
});

it("two delivery processes on one database never have more than the cap open to one subscription, and send every event once", async () => {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Processes",
    ownerEmail: `${randomUUID()}@processes.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route(`/processes/${randomUUID()}`, 500);
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  const count = 12;
  for (let i = 0; i < count; i++)
    await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `Process${i}` } });

  const log = platform.delivery.client(DeliveryService);
  await waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId: subscription!.id, pageSize: 100 });
      return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
    },
    40_000,
    "every delivery",
  );
  expect(route.maxOpen).toBe(CAP);
  const names = route.bodies.map((b) => JSON.parse(b).data.first_name).sort();
  expect(names).toEqual(Array.from({ length: count }, (_, i) => `Process${i}`).sort());
  for (const w of workers) expect(w.child.exitCode, w.output()).toBeNull();
  // Each process's own count of the POSTs it made: together, every event once.
  const sent = await Promise.all(
    ports.map(async (port) => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(/^webhook_delivery_attempts_total\{outcome="succeeded"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    }),
  );
  expect(sent[0]! + sent[1]!).toBe(count);
});
