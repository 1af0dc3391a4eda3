// Webhook delivery end to end, as a receiver sees it: contacts changed over
// the organisation RPC reach a local HTTP receiver through the real
// organisation, webhook and delivery services on PostgreSQL and NATS
// JetStream, signed (Standard Webhooks), retried, logged.
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { connect, type NatsConnection } from "nats";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { CONTACT_FAN_OUT_CONSUMER } from "../../services/delivery/fan-out/contact-fan-out.js";
import { contactJson } from "../../services/shared/contact-json.js";
import type { Config } from "../../services/shared/config.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { TEST_NATS_URL } from "../support/backends.js";
import { createDeliveryApp, startPlatform, type Platform, type StartedService } from "../support/platform.js";
import { spawnProcess, waitFor } from "../support/processes.js";
import { startReceiver, type Answer, type Receiver } from "../support/receiver.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "d".repeat(40);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  // Retries within a test's patience; the hanging receiver times out after one second.
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: "10",
  DELIVERY_POLL_MS: "50",
};

let platform: Platform;
let base: Config;
let receiver: Receiver;
let organisation: StartedService<ServiceApp>;
let webhook: StartedService<ServiceApp>;
let delivery: StartedService<ServiceApp>;
let nc: NatsConnection;
let orgs: ReturnType<typeof organisation.client<typeof OrganisationService>>;
let hooks: ReturnType<typeof webhook.client<typeof WebhookService>>;
let log: ReturnType<typeof delivery.client<typeof DeliveryService>>;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({ token: TOKEN, config: shared, webhook: true, delivery: true });
  ({ config: base, organisation, webhook, delivery } = platform);
  orgs = organisation.client(OrganisationService);
  hooks = webhook.client(WebhookService);
  log = delivery.client(DeliveryService);
  nc = await connect({ servers: TEST_NATS_URL });
});

afterAll(async () => {
  await nc?.close();
  await platform?.stop();
  await receiver?.close();
});

/** A new organisation, an application of it, and a subscription of theirs to a receiver path. */
async function subscribe(name: string, eventType = EventType.CONTACT_CREATED, answer?: (n: number) => Answer) {
  const org = await orgs.createOrganisation({ name, ownerEmail: `${randomUUID()}@delivery.test`, ownerPassword: "correct horse" });
  const owner = { organisationId: org.organisation!.id, clientId: `zapier-${randomUUID().slice(0, 8)}` } as Owner;
  const route = receiver.route(`/hooks/${randomUUID()}`, answer);
  const created = await hooks.createSubscription({ owner, targetUrl: route.url, eventType });
  return { owner, organisationId: owner.organisationId, route, subscription: created.subscription!, secret: created.secret };
}

const createContact = (organisationId: string, firstName = "Ada") =>
  orgs.createContact({ organisationId, fields: { firstName, lastName: "Lovelace", email: "ada@example.test", company: "Engines" } });

const headers = (h: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));

describe("a contact event reaches its subscriber", () => {
  it("POSTs exactly the contract's body, signed so that standardwebhooks verifies it", async () => {
    const created = await subscribe("Signed", EventType.CONTACT_CREATED);
    const updated = await hooks.createSubscription({
      owner: created.owner,
      targetUrl: `${created.route.url}/updates`,
      eventType: EventType.CONTACT_UPDATED,
    });
    const updatesRoute = receiver.route(new URL(`${created.route.url}/updates`).pathname);
    const contact = (await createContact(created.organisationId)).contact!;
    const changed = (await orgs.updateContact({ id: contact.id, organisationId: created.organisationId, fields: { company: "Analytical" } })).contact!;

    const [first] = await waitFor(() => (created.route.requests.length ? created.route.requests : undefined), 15_000, "contact.created");
    const [second] = await waitFor(() => (updatesRoute.requests.length ? updatesRoute.requests : undefined), 15_000, "contact.updated");

    for (const [request, type, data, secret] of [
      [first!, "contact.created", contactJson(contact), created.secret],
      [second!, "contact.updated", contactJson(changed), updated.secret],
    ] as const) {
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["webhook-id"]).toMatch(UUID);
      expect(request.headers["webhook-timestamp"]).toMatch(/^\d{10}$/);
      expect(request.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
      const body = JSON.parse(request.body);
      expect(Object.keys(body)).toEqual(["type", "timestamp", "data"]);
      expect(body).toEqual({ type, timestamp: expect.stringMatching(RFC3339), data });
      // The library verifies the signature over the exact bytes received.
      expect(new Webhook(secret).verify(request.body, headers(request.headers))).toEqual(body);
      expect(() => new Webhook(created.secret === secret ? updated.secret : created.secret).verify(request.body, headers(request.headers))).toThrow();
    }
    expect(second!.headers["webhook-id"]).not.toBe(first!.headers["webhook-id"]);
    // Contact, event and attempt ids are time-ordered (UUIDv7, RFC 9562 §5.7):
    // the update's event sorts after the creation's.
    expect(contact.id).toMatch(UUID_V7);
    expect(first!.headers["webhook-id"]).toMatch(UUID_V7);
    expect(second!.headers["webhook-id"]).toMatch(UUID_V7);
    expect(String(second!.headers["webhook-id"]) > String(first!.headers["webhook-id"])).toBe(true);
    // The log names the event and the outcome.
    await waitFor(async () => {
      const { attempts } = await log.listDeliveryAttempts({ owner: created.owner, subscriptionId: created.subscription.id });
      return attempts.length === 1 && attempts[0]!.outcome === "succeeded" ? attempts : undefined;
    });
    const { attempts } = await log.listDeliveryAttempts({ owner: created.owner, subscriptionId: created.subscription.id });
    expect(attempts[0]).toMatchObject({
      eventId: first!.headers["webhook-id"],
      eventType: "contact.created",
      attempt: 1,
      responseStatus: 200,
      outcome: "succeeded",
      error: "",
    });
    expect(attempts[0]!.nextAttemptTime).toBeUndefined();
    expect(attempts[0]!.id).toMatch(UUID_V7);
  });

  it("sends nothing to another organisation's subscribers nor for another event type", async () => {
    const mine = await subscribe("Mine", EventType.CONTACT_CREATED);
    const other = await subscribe("Other", EventType.CONTACT_CREATED);
    const updatesOnly = await subscribe("UpdatesOnly", EventType.CONTACT_UPDATED);
    await createContact(mine.organisationId);
    await createContact(updatesOnly.organisationId);
    await waitFor(() => mine.route.requests.length === 1, 15_000, "delivery");
    // The other organisation's contact event, published after, arrives: everything before it was fanned out.
    await createContact(other.organisationId);
    await waitFor(() => other.route.requests.length === 1, 15_000, "delivery");
    expect(updatesOnly.route.requests).toHaveLength(0);
    expect(mine.route.requests).toHaveLength(1);
  });
});

describe("retries", () => {
  it("500 then 200: delivered on the retry, with the same webhook-id, and both attempts logged newest first", async () => {
    const sub = await subscribe("Retry", EventType.CONTACT_CREATED, (n) => (n === 1 ? { status: 500 } : { status: 200 }));
    await createContact(sub.organisationId);
    await waitFor(() => sub.route.requests.length >= 2, 15_000, "retry");
    const [a, b] = sub.route.requests;
    expect(b!.headers["webhook-id"]).toBe(a!.headers["webhook-id"]);
    expect(b!.body).toBe(a!.body);
    new Webhook(sub.secret).verify(b!.body, headers(b!.headers));
    const attempts = await waitFor(async () => {
      const res = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return res.attempts.length === 2 ? res.attempts : undefined;
    });
    expect(attempts.map((x) => [x.attempt, x.outcome, x.responseStatus, x.error])).toEqual([
      [2, "succeeded", 200, ""],
      [1, "failed", 500, "HTTP 500"],
    ]);
    expect(attempts[1]!.nextAttemptTime).toBeDefined();
    const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ status: "succeeded", attempts: 2, responseStatus: 200, eventType: "contact.created" });
    expect(sub.route.requests).toHaveLength(2);
  });

  it("honours Retry-After (within the cap)", async () => {
    const sub = await subscribe("RetryAfter", EventType.CONTACT_CREATED, (n) => (n === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 200 }));
    await createContact(sub.organisationId);
    await waitFor(() => sub.route.requests.length >= 2, 15_000, "retry");
    const [a, b] = sub.route.requests;
    // The schedule says 0.2 s; the receiver asked for 2 s.
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(1900);
  });

  it("a receiver that never answers: the attempt times out and is retried", async () => {
    const sub = await subscribe("Hang", EventType.CONTACT_CREATED, (n) => (n === 1 ? "hang" : { status: 204 }));
    await createContact(sub.organisationId);
    const attempts = await waitFor(async () => {
      const res = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return res.attempts.length === 2 ? res.attempts : undefined;
    }, 15_000, "timeout and retry");
    expect(attempts[1]).toMatchObject({ attempt: 1, outcome: "failed", responseStatus: 0 });
    expect(attempts[1]!.error).toMatch(/^timeout: /);
    expect(attempts[1]!.durationMs).toBeGreaterThanOrEqual(900);
    expect(attempts[1]!.durationMs).toBeLessThan(5000);
    expect(attempts[0]).toMatchObject({ attempt: 2, outcome: "succeeded", responseStatus: 204 });
  });

  it("gives up when the schedule is exhausted; operators list it; RetryDelivery sends it once more", async () => {
    let healthy = false;
    const sub = await subscribe("GiveUp", EventType.CONTACT_CREATED, () => (healthy ? { status: 200 } : { status: 502 }));
    await createContact(sub.organisationId);
    // The first attempt and the schedule's three retries.
    const [gaveUp] = await waitFor(async () => {
      const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return deliveries[0]?.status === "gave_up" ? deliveries : undefined;
    }, 15_000, "gave_up");
    expect(gaveUp).toMatchObject({ attempts: 4, responseStatus: 502, error: "HTTP 502" });
    expect(gaveUp!.nextAttemptTime).toBeUndefined();
    expect(sub.route.requests).toHaveLength(4);
    const { attempts } = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(attempts.map((a) => a.outcome)).toEqual(["gave_up", "failed", "failed", "failed"]);

    const failed = await log.listFailedDeliveries({ organisationId: sub.organisationId });
    expect(failed.deliveries.map((d) => d.id)).toEqual([gaveUp!.id]);
    expect(failed.deliveries[0]!.owner).toMatchObject({ organisationId: sub.organisationId, clientId: sub.owner.clientId });

    // Another owner cannot retry it, nor see it.
    const stranger = { organisationId: sub.organisationId, clientId: "someone-else" } as Owner;
    expect((await rpcError(log.retryDelivery({ owner: stranger, subscriptionId: sub.subscription.id, deliveryId: gaveUp!.id }))).code).toBe(Code.NotFound);
    expect((await log.listDeliveries({ owner: stranger, subscriptionId: sub.subscription.id })).deliveries).toEqual([]);

    // The operator's view: `bizcard deliveries failed`.
    const cli = spawnProcess(process.execPath, ["bin/bizcard.js", "deliveries", "failed", "--org", sub.organisationId, "--json"], {
      DELIVERY_RPC_URL: delivery.server.url,
      INTERNAL_RPC_TOKEN: TOKEN,
      DATA_DIR: undefined,
    });
    let stdout = "";
    cli.child.stdout!.on("data", (d) => (stdout += d));
    expect(await cli.exited, cli.output()).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      deliveries: [
        {
          id: Number(gaveUp!.id),
          event_id: sub.route.requests[0]!.headers["webhook-id"],
          event_type: "contact.created",
          subscription_id: Number(sub.subscription.id),
          organisation_id: sub.organisationId,
          client_id: sub.owner.clientId,
          status: "gave_up",
          attempts: 4,
          status_code: 502,
          error: "HTTP 502",
          next_retry_at: null,
          created_at: expect.stringMatching(RFC3339),
          updated_at: expect.stringMatching(RFC3339),
        },
      ],
    });

    healthy = true;
    const retried = await log.retryDelivery({ owner: sub.owner, subscriptionId: sub.subscription.id, deliveryId: gaveUp!.id });
    expect(retried.delivery?.status).toBe("pending");
    await waitFor(() => sub.route.requests.length === 5, 15_000, "manual retry");
    expect(sub.route.requests[4]!.headers["webhook-id"]).toBe(sub.route.requests[0]!.headers["webhook-id"]);
    await waitFor(async () => {
      const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return deliveries[0]?.status === "succeeded" ? true : undefined;
    });
    expect((await log.listFailedDeliveries({ organisationId: sub.organisationId })).deliveries).toEqual([]);
  });

  it("410 Gone: the subscription is deleted and gets nothing more", async () => {
    const sub = await subscribe("Gone", EventType.CONTACT_CREATED, () => ({ status: 410 }));
    await createContact(sub.organisationId);
    await waitFor(async () => {
      const err = await hooks.getSubscription({ owner: sub.owner, id: sub.subscription.id }).then(() => undefined, (e: unknown) => e);
      return err ? true : undefined;
    }, 15_000, "subscription deleted");
    expect((await rpcError(hooks.getSubscription({ owner: sub.owner, id: sub.subscription.id }))).code).toBe(Code.NotFound);
    const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(deliveries[0]).toMatchObject({ status: "gone", attempts: 1, responseStatus: 410 });
    const { attempts } = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(attempts.map((a) => a.outcome)).toEqual(["gone"]);
    // Nothing more for it; a later event of the organisation reaches a fresh subscriber only.
    const fresh = receiver.route(`/hooks/${randomUUID()}`);
    await hooks.createSubscription({ owner: sub.owner, targetUrl: fresh.url, eventType: EventType.CONTACT_CREATED });
    await createContact(sub.organisationId);
    await waitFor(() => fresh.requests.length === 1, 15_000, "fresh subscriber");
    expect(sub.route.requests).toHaveLength(1);
    expect((await rpcError(log.retryDelivery({ owner: sub.owner, subscriptionId: sub.subscription.id, deliveryId: deliveries[0]!.id }))).code).toBe(
      Code.FailedPrecondition,
    );
  });
});

describe("several workers, a lost consumer", () => {
  it("two delivery workers at once send no delivery twice", async () => {
    const second = await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
    try {
      // A slow receiver keeps both workers busy at once.
      const sub = await subscribe("Pair", EventType.CONTACT_CREATED);
      const slow = receiver.route(new URL(sub.route.url).pathname, () => ({ status: 200, delayMs: 30 }));
      const count = 40;
      for (let i = 0; i < count; i++) await createContact(sub.organisationId, `Worker${i}`);
      await waitFor(async () => {
        const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id, pageSize: 100 });
        return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
      }, 30_000, "every delivery");
      const ids = slow.requests.map((r) => r.headers["webhook-id"]);
      expect(ids).toHaveLength(count);
      expect(new Set(ids).size).toBe(count);
    } finally {
      await second.stop();
    }
  });

  it("a deleted consumer is recreated after the recorded position: nothing sent again, nothing skipped", async () => {
    const sub = await subscribe("Lost", EventType.CONTACT_CREATED);
    for (let i = 0; i < 3; i++) await createContact(sub.organisationId, `Before${i}`);
    await waitFor(() => sub.route.requests.length === 3, 15_000, "before");
    const jsm = await nc.jetstreamManager();
    await jsm.consumers.delete(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER);
    for (let i = 0; i < 3; i++) await createContact(sub.organisationId, `While${i}`);
    await waitFor(() => sub.route.requests.length >= 6, 20_000, "after");
    const info = await waitFor(() => jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER), 15_000, "consumer back");
    // Recreated right after what was recorded, not from the start of the stream.
    expect(info.config.deliver_policy).toBe("by_start_sequence");
    expect(info.config.opt_start_seq).toBeGreaterThan(3);
    // Everything the stream holds was handed out once more at most, and all of it is handled.
    await waitFor(async () => ((await jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER)).num_pending === 0 ? true : undefined));
    const names = sub.route.requests.map((r) => JSON.parse(r.body).data.first_name).sort();
    expect(names).toEqual(["Before0", "Before1", "Before2", "While0", "While1", "While2"]);
    expect(new Set(sub.route.requests.map((r) => r.headers["webhook-id"])).size).toBe(6);
  });
});
