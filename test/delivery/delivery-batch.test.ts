// The fan-out in batches keeps the one-by-one guarantees: events published
// together (so that the consumer takes them in batches) reach each matching
// subscription exactly once, across organisations and event types; and when
// the durable consumer is deleted while events flow, it comes back after the
// recorded position: nothing sent twice, nothing skipped.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ContactEventSchema, EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { ContactSchema } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { CONTACT_FAN_OUT_CONSUMER } from "../../services/delivery/fan-out/contact-fan-out.js";
import type { Config } from "../../services/shared/config.js";
import { subjectFor, type EventBus } from "../../services/shared/event-bus/event-bus.js";
import { nameOfEventType } from "../../services/shared/event-types.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { TEST_NATS_URL } from "../support/backends.js";
import { createDeliveryApp, startPlatform, type Platform, type StartedService } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const TOKEN = "b".repeat(40);
const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_TIMEOUT_MS: "2000",
  DELIVERY_POLL_MS: "50",
};

let platform: Platform;
let base: Config;
let bus: EventBus;
let receiver: Receiver;
let webhook: StartedService<ServiceApp>;
let nc: NatsConnection;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({ token: TOKEN, config: shared, organisation: false, webhook: true });
  ({ config: base, bus, webhook } = platform);
  nc = await connect({ servers: TEST_NATS_URL });
});

afterAll(async () => {
  await nc?.close();
  await platform?.stop();
  await receiver?.close();
});

const startDelivery = (webhookUrl = webhook.server.url) =>
  platform.startService((deps) => createDeliveryApp(deps), platform.configWith({ WEBHOOK_RPC_URL: webhookUrl }));

/** A contact event as the organisation service publishes it; returns its event id. */
async function publish(
  organisationId: string,
  type: EventType.CONTACT_CREATED | EventType.CONTACT_UPDATED,
  name: string,
): Promise<string> {
  const eventId = randomUUID();
  const now = timestampFromDate(new Date());
  const event = create(ContactEventSchema, {
    eventId,
    type,
    organisationId,
    occurTime: now,
    contact: create(ContactSchema, {
      id: randomUUID(),
      organisationId,
      firstName: name,
      createTime: now,
      updateTime: now,
    }),
  });
  await bus.publish(
    subjectFor(base.NATS_SUBJECT_PREFIX, nameOfEventType(type)),
    toBinary(ContactEventSchema, event),
    eventId,
  );
  return eventId;
}

async function subscribe(owner: Owner, path: string, eventType: EventType) {
  const route = receiver.route(path);
  await webhook.client(WebhookService).createSubscription({ owner, targetUrl: route.url, eventType });
  return route;
}

/** The consumer has handed out everything and has nothing in hand. */
async function drained(): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await waitFor(
    async () => {
      const info = await jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER);
      return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
    },
    20_000,
    "consumer drained",
  );
}

const ids = (route: { requests: { headers: Record<string, unknown> }[] }) =>
  route.requests.map((r) => String(r.headers["webhook-id"]));

it("50 events published at once across 2 organisations and both event types: each subscription gets exactly its events, once", async () => {
  const [orgA, orgB] = [randomUUID(), randomUUID()];
  // Published before the fan-out starts: it finds them all waiting and takes them in batches.
  const expected = new Map<string, string[]>();
  const key = (org: string, type: EventType) => `${org} ${type}`;
  for (let i = 0; i < 50; i++) {
    const org = i % 2 === 0 ? orgA : orgB;
    const type = i % 3 === 0 ? EventType.CONTACT_UPDATED : EventType.CONTACT_CREATED;
    const id = await publish(org, type, `Batch${i}`);
    expected.set(key(org, type), [...(expected.get(key(org, type)) ?? []), id]);
  }
  const routes = {
    aCreated: await subscribe(
      { organisationId: orgA, clientId: "zapier" } as Owner,
      "/a-created",
      EventType.CONTACT_CREATED,
    ),
    aCreatedOther: await subscribe(
      { organisationId: orgA, clientId: "make" } as Owner,
      "/a-created-other",
      EventType.CONTACT_CREATED,
    ),
    aUpdated: await subscribe(
      { organisationId: orgA, clientId: "zapier" } as Owner,
      "/a-updated",
      EventType.CONTACT_UPDATED,
    ),
    bCreated: await subscribe(
      { organisationId: orgB, clientId: "zapier" } as Owner,
      "/b-created",
      EventType.CONTACT_CREATED,
    ),
    bUpdated: await subscribe(
      { organisationId: orgB, clientId: "zapier" } as Owner,
      "/b-updated",
      EventType.CONTACT_UPDATED,
    ),
  };
  const want = {
    aCreated: expected.get(key(orgA, EventType.CONTACT_CREATED))!,
    aCreatedOther: expected.get(key(orgA, EventType.CONTACT_CREATED))!,
    aUpdated: expected.get(key(orgA, EventType.CONTACT_UPDATED))!,
    bCreated: expected.get(key(orgB, EventType.CONTACT_CREATED))!,
    bUpdated: expected.get(key(orgB, EventType.CONTACT_UPDATED))!,
  };
  const total = Object.values(want).reduce((n, list) => n + list.length, 0);
  const delivery = await startDelivery();
  try {
    await waitFor(
      () => Object.values(routes).reduce((n, r) => n + r.requests.length, 0) >= total,
      30_000,
      "every delivery",
    );
    await drained();
    for (const [name, route] of Object.entries(routes)) {
      const got = ids(route);
      expect(got.length, name).toBe(want[name as keyof typeof want].length);
      expect(new Set(got), name).toEqual(new Set(want[name as keyof typeof want]));
      // Each body is its own event's (the webhook-id and the body's contact match one published event).
      for (const r of route.requests)
        expect(JSON.parse(r.body).type).toBe(name.includes("Updated") ? "contact.updated" : "contact.created");
    }
  } finally {
    await delivery.stop();
  }
});

it("the consumer is deleted while batches are in hand and events keep coming: recreated after the recorded position, nothing sent twice, nothing skipped", async () => {
  const org = randomUUID();
  const route = await subscribe(
    { organisationId: org, clientId: "zapier" } as Owner,
    "/lost",
    EventType.CONTACT_CREATED,
  );
  const published: string[] = [];
  for (let i = 0; i < 40; i++) published.push(await publish(org, EventType.CONTACT_CREATED, `Early${i}`));
  const jsm = await nc.jetstreamManager();
  const before = (await jsm.streams.info(base.NATS_STREAM)).state.last_seq;
  const delivery = await startDelivery();
  // Some are delivered, then the consumer goes away while the rest flow in.
  await waitFor(() => route.requests.length >= 5, 20_000, "the first deliveries");
  await jsm.consumers.delete(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER);
  for (let i = 0; i < 40; i++) published.push(await publish(org, EventType.CONTACT_CREATED, `Late${i}`));
  await waitFor(() => route.requests.length >= published.length, 30_000, "every event");
  const info = await waitFor(
    () => jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER),
    15_000,
    "consumer back",
  );
  // Recreated right after what was recorded, not from the start of the stream.
  expect(info.config.deliver_policy).toBe("by_start_sequence");
  expect(info.config.opt_start_seq).toBeGreaterThan(1);
  expect(info.config.opt_start_seq).toBeLessThanOrEqual(before + 41);
  await drained();
  const got = ids(route);
  expect(got).toHaveLength(published.length);
  expect(new Set(got)).toEqual(new Set(published));
  await delivery.stop();
});

/** A way to the webhook service that can be cut: while down, every call fails (connection reset). */
async function switchableProxy(target: string) {
  let up = true;
  const server = http.createServer((req, res) => {
    if (!up) return void req.socket.destroy();
    const url = new URL(req.url ?? "/", target);
    const forward = http.request(url, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on("error", () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (value: boolean) => {
      up = value;
      if (!value) server.closeAllConnections();
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

it("a batch whose subscribers cannot be read is retried, later events waiting behind it: once the webhook service answers, each event arrives once", async () => {
  const proxy = await switchableProxy(webhook.server.url);
  try {
    const org = randomUUID();
    const route = await subscribe(
      { organisationId: org, clientId: "zapier" } as Owner,
      "/retried",
      EventType.CONTACT_CREATED,
    );
    // The fan-out cannot read subscribers: its batches fail and are retried.
    proxy.set(false);
    const published: string[] = [];
    for (let i = 0; i < 20; i++) published.push(await publish(org, EventType.CONTACT_CREATED, `Retried${i}`));
    const jsm = await nc.jetstreamManager();
    const delivery = await startDelivery(proxy.url);
    // In hand and unacknowledged while failing (not skipped, not given up).
    await waitFor(
      async () => {
        const info = await jsm.consumers.info(base.NATS_STREAM, CONTACT_FAN_OUT_CONSUMER);
        return info.num_ack_pending > 0 ? true : undefined;
      },
      15_000,
      "a batch in hand",
    );
    for (let i = 0; i < 20; i++) published.push(await publish(org, EventType.CONTACT_CREATED, `Behind${i}`));
    expect(route.requests).toHaveLength(0);
    proxy.set(true);
    await waitFor(() => route.requests.length >= published.length, 30_000, "every event");
    await drained();
    const got = ids(route);
    expect(got).toHaveLength(published.length);
    expect(new Set(got)).toEqual(new Set(published));
    await delivery.stop();
  } finally {
    await proxy.close();
  }
});
