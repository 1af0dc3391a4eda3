// A delivery process that stops (SIGTERM, a deploy) waits for the POSTs it
// has open and records them before it lets go of the database: the delivery
// is not left claimed, to be sent a second time once its claim lease runs out.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { DeliveryWorker } from "../../services/delivery/worker/delivery-worker.js";
import { startCountingReceiver, type CountingReceiver } from "../support/counting-receiver.js";
import { createDeliveryApp, startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const HOLD_MS = 800;

let platform: Platform;
let receiver: CountingReceiver;

beforeAll(async () => {
  receiver = await startCountingReceiver();
  platform = await startPlatform({
    config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true", DELIVERY_POLL_MS: "50", DELIVERY_TIMEOUT_MS: "5000" },
    webhook: true,
    delivery: false,
  });
});

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

it("stopping a delivery service waits for its open POSTs and records them: each delivered once, none left claimed", async () => {
  const delivery = await platform.startService((deps) => createDeliveryApp(deps));
  const orgs = platform.organisation.client(OrganisationService);
  const org = await orgs.createOrganisation({
    name: "Stopping",
    ownerEmail: `${randomUUID()}@stop.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: "zapier" } as Owner;
  const route = receiver.route(`/stop/${randomUUID()}`, HOLD_MS);
  const { subscription } = await platform.webhook
    .client(WebhookService)
    .createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
  for (const firstName of ["Ada", "Grace"])
    await orgs.createContact({ organisationId: owner.organisationId, fields: { firstName } });
  await waitFor(() => (route.open === 2 ? true : undefined), 15_000, "both POSTs open at the target");

  await delivery.stop();
  // stop() returned after the target answered, not before.
  expect(route.open).toBe(0);
  expect(route.arrivals).toHaveLength(2);

  // Another delivery service (no worker of its own needed to read the log) finds both recorded.
  // Its worker's claim rounds, and the claimed rows it sends (dispatch), are watched.
  type Watched = { round(): Promise<number>; dispatch(rows: unknown[]): Promise<void> };
  const worker = DeliveryWorker.prototype as unknown as Watched;
  const round = vi.spyOn(worker, "round");
  const dispatch = vi.spyOn(worker, "dispatch");
  const reader = await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
  try {
    const { deliveries } = await reader
      .client(DeliveryService)
      .listDeliveries({ owner, subscriptionId: subscription!.id, pageSize: 10 });
    expect(deliveries.map((d) => [d.status, d.attempts])).toEqual([
      ["succeeded", 1],
      ["succeeded", 1],
    ]);
    // And nothing is sent again: a claim round begun after that read has ended, and no round claimed anything.
    const readAt = round.mock.calls.length;
    const roundEnded = () => round.mock.settledResults.slice(readAt).some((r) => r.type === "fulfilled");
    await waitFor(() => (roundEnded() ? true : undefined), 10_000, "a claim round");
    expect(dispatch).not.toHaveBeenCalled();
    expect(route.arrivals).toHaveLength(2);
  } finally {
    await reader.stop();
    round.mockRestore();
    dispatch.mockRestore();
  }
});
