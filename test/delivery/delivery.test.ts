// Webhook delivery end to end, as a receiver sees it: contacts changed over
// the organisation RPC reach a local HTTP receiver through the real
// organisation, webhook and delivery services on PostgreSQL and NATS
// JetStream, signed (Standard Webhooks), logged; several workers, and a lost
// consumer. Retries: delivery-retries.test.ts.
import { connect, type NatsConnection } from "nats";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { CONTACT_FAN_OUT_CONSUMER } from "../../services/delivery/fan-out/contact-fan-out.js";
import { contactJson } from "../../services/shared/contact-json.js";
import { TEST_NATS_URL } from "../support/backends.js";
import {
  base,
  createContact,
  headers,
  hooks,
  log,
  orgs,
  platform,
  RFC3339,
  receiver,
  subscribe,
  UUID,
  UUID_V7,
  useDeliveryE2eSuite,
} from "../support/delivery-e2e-suite.js";
import { createDeliveryApp } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

useDeliveryE2eSuite();

let nc: NatsConnection;

beforeAll(async () => {
  nc = await connect({ servers: TEST_NATS_URL });
});

afterAll(async () => {
  await nc?.close();
});

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
    const changed = (
      await orgs.updateContact({
        id: contact.id,
        organisationId: created.organisationId,
        fields: { company: "Analytical" },
      })
    ).contact!;

    const [first] = await waitFor(
      () => (created.route.requests.length ? created.route.requests : undefined),
      15_000,
      "contact.created",
    );
    const [second] = await waitFor(
      () => (updatesRoute.requests.length ? updatesRoute.requests : undefined),
      15_000,
      "contact.updated",
    );

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
      expect(() =>
        new Webhook(created.secret === secret ? updated.secret : created.secret).verify(
          request.body,
          headers(request.headers),
        ),
      ).toThrow();
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
      const { attempts } = await log.listDeliveryAttempts({
        owner: created.owner,
        subscriptionId: created.subscription.id,
      });
      return attempts.length === 1 && attempts[0]!.outcome === "succeeded" ? attempts : undefined;
    });
    const { attempts } = await log.listDeliveryAttempts({
      owner: created.owner,
      subscriptionId: created.subscription.id,
    });
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

describe("several workers, a lost consumer", () => {
  it("two delivery workers at once send no delivery twice", async () => {
    const second = await platform.startService((deps) => createDeliveryApp(deps, { fanOut: false }));
    try {
      // A slow receiver keeps both workers busy at once.
      const sub = await subscribe("Pair", EventType.CONTACT_CREATED);
      const slow = receiver.route(new URL(sub.route.url).pathname, () => ({ status: 200, delayMs: 30 }));
      const count = 40;
      for (let i = 0; i < count; i++) await createContact(sub.organisationId, `Worker${i}`);
      await waitFor(
        async () => {
          const { deliveries } = await log.listDeliveries({
            owner: sub.owner,
            subscriptionId: sub.subscription.id,
            pageSize: 100,
          });
          return deliveries.length === count && deliveries.every((d) => d.status === "succeeded") ? true : undefined;
        },
        30_000,
        "every delivery",
      );
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
    const info = await waitFor(
      () => jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER),
      15_000,
      "consumer back",
    );
    // Recreated right after what was recorded, not from the start of the stream.
    expect(info.config.deliver_policy).toBe("by_start_sequence");
    expect(info.config.opt_start_seq).toBeGreaterThan(3);
    // Everything the stream holds was handed out once more at most, and all of it is handled.
    await waitFor(async () =>
      (await jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER)).num_pending === 0 ? true : undefined,
    );
    const names = sub.route.requests.map((r) => JSON.parse(r.body).data.first_name).sort();
    expect(names).toEqual(["Before0", "Before1", "Before2", "While0", "While1", "While2"]);
    expect(new Set(sub.route.requests.map((r) => r.headers["webhook-id"])).size).toBe(6);
  });
});
