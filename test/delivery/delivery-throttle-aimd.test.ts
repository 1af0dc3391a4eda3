// Throttling by the target without Retry-After: a 503 halves the
// subscription's in-flight cap (at least 1), and each success grows it back
// by one, up to WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION (a simple AIMD).
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const TOKEN = "f".repeat(40);
const CAP = 4;
const HOLD_MS = 600;
const OVERLOADED = 4;

/** A request as the receiver saw it: when it came, how many (itself included) were open then, the answer's status. */
interface Arrival {
  at: number;
  open: number;
  status: number;
}

let platform: Platform;
let server: http.Server;
const arrivals: Arrival[] = [];

beforeAll(async () => {
  let open = 0;
  // Holds every request HOLD_MS; the first OVERLOADED are answered 503 without Retry-After, the rest 200.
  server = http.createServer((req, res) => {
    req.resume();
    const status = arrivals.length < OVERLOADED ? 503 : 200;
    arrivals.push({ at: Date.now(), open: ++open, status });
    res.on("close", () => open--);
    setTimeout(() => res.writeHead(status).end(), HOLD_MS);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_TIMEOUT_MS: "2000",
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

it("a 503 without Retry-After halves the subscription's in-flight cap, and successes grow it back", async () => {
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Overloaded",
    ownerEmail: `${randomUUID()}@aimd.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/aimd`;
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: url, eventType: EventType.CONTACT_CREATED });
  const count = 16;
  // All at once: under load, one by one could leave the first POST answered before the cap's worth is queued.
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      orgs.createContact({ organisationId: owner.organisationId, fields: { firstName: `Overloaded${i}` } }),
    ),
  );

  const log = platform.delivery.client(DeliveryService);
  await waitFor(
    async () => {
      const { deliveries } = await log.listDeliveries({ owner, subscriptionId: subscription!.id, pageSize: 100 });
      return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
    },
    30_000,
    "every delivery",
  );
  expect(arrivals).toHaveLength(count + OVERLOADED);
  // The overloaded answers came to the cap's worth of POSTs open at once.
  expect(arrivals.slice(0, OVERLOADED).map((a) => a.status)).toEqual(Array(OVERLOADED).fill(503));
  expect(Math.max(...arrivals.slice(0, OVERLOADED).map((a) => a.open))).toBe(CAP);
  // After them, at most half the cap is sent before an answer frees a slot (the configured cap would send 4 at once).
  const after = arrivals.slice(OVERLOADED);
  const firstWave = after.filter((a) => a.at < after[0]!.at + HOLD_MS - 50);
  expect(firstWave.length).toBeLessThanOrEqual(CAP / 2);
  expect(Math.max(...firstWave.map((a) => a.open))).toBeLessThanOrEqual(CAP / 2);
  // Each success adds one back: the cap is reached again, never passed.
  expect(Math.max(...after.map((a) => a.open))).toBe(CAP);
});
