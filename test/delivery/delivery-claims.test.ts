// Retry state lives in PostgreSQL: a worker that claimed deliveries and died
// before sending them does not lose them. Its claim lease runs out and another
// worker sends each of them, once.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { DELIVERY_ENTITIES } from "../../services/delivery/delivery-app.js";
import { createDeliveryStore } from "../../services/delivery/deliveries/delivery-store.js";
import { DELIVERY_SCHEMA } from "../../services/delivery/delivery-service.js";
import { deliveryMigrations } from "../../services/delivery/migrations/index.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import { createLogger } from "../../services/shared/logger.js";
import type { TestDatabase } from "../support/backends.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const TOKEN = "l".repeat(40);
const LEASE_SECONDS = 6;
const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: String(LEASE_SECONDS),
  DELIVERY_POLL_MS: "50",
};

let platform: Platform;
let db: TestDatabase;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({ token: TOKEN, config: shared, webhook: true });
  db = platform.db;
});

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

it("deliveries claimed by a worker that died are sent by another once the claim lease runs out, each once", async () => {
  const { organisation, webhook } = platform;
  // The fan-out alone: rows are written, nobody sends them yet.
  const fanOut = await platform.startService((deps) => createDeliveryApp(deps, { workers: false }));

  const orgs = organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Claims",
    ownerEmail: `${randomUUID()}@claims.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route("/claims");
  const { subscription } = await webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  for (let i = 0; i < 5; i++)
    await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `Claimed${i}` } });
  const log = fanOut.client(DeliveryService);
  await waitFor(
    async () =>
      (await log.listDeliveries({ owner, subscriptionId: subscription!.id })).deliveries.length === 5
        ? true
        : undefined,
    15_000,
    "fan-out",
  );

  // A worker claims them all, then dies without sending or recording anything.
  const orm = await openServiceDatabase(
    {
      databaseUrl: db.url,
      databasePoolMax: 1,
      logger: createLogger("test", "silent"),
      config: { MIGRATE_ON_START: false },
    },
    { schema: DELIVERY_SCHEMA, entities: DELIVERY_ENTITIES, migrations: deliveryMigrations },
  );
  let claimedAt: number;
  try {
    const claimed = await createDeliveryStore(orm).claim(100, LEASE_SECONDS);
    claimedAt = Date.now();
    expect(claimed).toHaveLength(5);
  } finally {
    await orm.close();
  }

  // Another worker starts at once; the claimed rows are not its to send until the lease ends.
  await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
  await waitFor(() => route.requests.length === 5, 20_000, "deliveries after the lease");
  expect(route.requests[0]!.at - claimedAt!).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 500);
  await waitFor(async () => {
    const { deliveries } = await log.listDeliveries({ owner, subscriptionId: subscription!.id });
    return deliveries.every((d) => d.status === "succeeded") ? true : undefined;
  });
  const names = route.requests.map((r) => JSON.parse(r.body).data.first_name).sort();
  expect(names).toEqual(["Claimed0", "Claimed1", "Claimed2", "Claimed3", "Claimed4"]);
  // The dead worker's claim counted as an attempt that left no record; the log shows what was sent.
  const { attempts } = await log.listDeliveryAttempts({ owner, subscriptionId: subscription!.id });
  expect(attempts.map((a) => a.outcome)).toEqual(Array(5).fill("succeeded"));
});
