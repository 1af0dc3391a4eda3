// Nothing lost, nothing doubled on NATS: two relays on one stream, an event
// waiting for its first consumer, a NATS restart, a process kill between
// commit and publish, and a crash between publish and marking the row sent.
// The file runs its own nats-server on a free port (the shared one is never
// stopped).
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ContactEventSchema, EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { ORGANISATION_SCHEMA } from "../../services/organisation/organisation-service.js";
import type { Config } from "../../services/shared/config.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import { OutboxRelay } from "../../services/shared/outbox/relay.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { testConfig } from "../support/backends.js";
import { freePort, httpReady, spawnTs, waitFor, type Spawned } from "../support/processes.js";
import { openTestBus } from "../support/services.js";
import { readStream } from "../support/stream.js";
import { cleanups, countBy, db, nats, startOrganisation, useOutboxRelaySuite } from "../support/outbox-relay-suite.js";

useOutboxRelaySuite();

describe("outbox relay", () => {
  it("with two relays on NATS, the stream holds each event once, in commit order", async () => {
    const { config, bus, organisation: svc } = await startOrganisation({ NATS_URL: nats.url });
    const logger = createLogger("test", "silent");
    const replica = new OutboxRelay({ orm: svc.app.orm, schema: ORGANISATION_SCHEMA, bus, logger, pollMs: 20 });
    replica.start();
    cleanups.push(() => replica.stop());
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Replicas",
      ownerEmail: "r@replicas.test",
      ownerPassword: "password-r",
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      ids.push(
        (await client.createContact({ organisationId: organisation!.id, fields: { firstName: `R${i}` } })).contact!.id,
      );
    }
    await waitFor(async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined), 20_000, "backlog drained");
    const stored = (await readStream(nats.url, config.NATS_STREAM)).filter(
      (s) => s.event.organisationId === organisation!.id,
    );
    expect(stored.map((s) => s.event.contact?.id)).toEqual(ids);
  });

  it("on the in-process bus, an event with no consumer yet waits in the outbox, then goes out", async () => {
    const refused: string[] = [];
    const refusing = (config: Config): EventBus => {
      const inner = new InProcessBus(config.NATS_SUBJECT_PREFIX);
      return {
        kind: inner.kind,
        publish: (subject, data, msgId) =>
          inner.publish(subject, data, msgId).catch((err) => (refused.push(msgId), Promise.reject(err))),
        consume: (options, handler) => inner.consume(options, handler),
        subscribe: (subject, handler) => inner.subscribe(subject, handler),
        announce: (topic, data) => inner.announce(topic, data),
        listen: (topic, handler) => inner.listen(topic, handler),
        connected: true,
        onConnectionChange: (listener) => inner.onConnectionChange(listener),
        ping: () => inner.ping(),
        close: () => inner.close(),
      };
    };
    const { bus, organisation: svc } = await startOrganisation({ NATS_URL: "" }, refusing);
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Later",
      ownerEmail: "l@later.test",
      ownerPassword: "password-l",
    });
    const { contact } = await client.createContact({
      organisationId: organisation!.id,
      fields: { firstName: "Waiting" },
    });
    // The relay has tried to publish it, and the bus refused: the row is still there.
    await waitFor(() => (refused.length > 0 ? true : undefined), 20_000, "a refused publish");
    expect(await svc.app.relay.backlog()).toBe(1);
    const got: { msgId: string; contactId: string; type: EventType }[] = [];
    await bus.consume({ durable: "late", subject: "contact.>" }, async (m) => {
      const event = fromBinary(ContactEventSchema, m.data);
      got.push({ msgId: m.msgId, contactId: event.contact?.id ?? "", type: event.type });
    });
    await waitFor(async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined), 20_000, "backlog drained");
    expect(got).toEqual([{ msgId: refused[0], contactId: contact!.id, type: EventType.CONTACT_CREATED }]);
  });

  it("publishes what was committed while NATS was down once it is back, each event once", async () => {
    // The real bus, counting the publishes the broker refused.
    let refused = 0;
    const counting = async (config: Config) => {
      const bus = await openTestBus(config);
      const publish = bus.publish.bind(bus);
      bus.publish = (...args) => publish(...args).catch((err) => (refused++, Promise.reject(err)));
      return bus;
    };
    const { config, organisation: svc } = await startOrganisation({ NATS_URL: nats.url }, counting);
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Restart",
      ownerEmail: "r@restart.test",
      ownerPassword: "password-r",
    });
    const a = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Before" } });
    await waitFor(
      async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined),
      15_000,
      "first event published",
    );

    await nats.stop();
    const b = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "During" } });
    await client.updateContact({ id: b.contact!.id, organisationId: organisation!.id, fields: { lastName: "Outage" } });
    expect(await svc.app.relay.backlog()).toBe(2);
    // The relay tries during the outage, and fails.
    await waitFor(() => (refused > 0 ? true : undefined), 30_000, "a publish refused while NATS is down");
    await nats.restart();

    await waitFor(async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined), 45_000, "backlog drained");
    const stored = await readStream(nats.url, config.NATS_STREAM);
    expect(stored.map((s) => [s.event.contact?.id, s.event.type])).toEqual([
      [a.contact!.id, EventType.CONTACT_CREATED],
      [b.contact!.id, EventType.CONTACT_CREATED],
      [b.contact!.id, EventType.CONTACT_UPDATED],
    ]);
    expect(stored.every((s) => s.msgId === s.event.eventId)).toBe(true);
    expect(stored[2]!.subject).toBe(`${config.NATS_SUBJECT_PREFIX}.contact.updated`);
    expect(stored[2]!.event.contact?.lastName).toBe("Outage");
  });

  it("a crash after publishing but before marking sent publishes again, and the stream keeps one copy", async () => {
    const { config, bus, organisation: svc } = await startOrganisation({ NATS_URL: nats.url });
    // The relay is stopped: this test drives it by hand.
    await svc.app.relay.stop();
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Crash",
      ownerEmail: "c@crash.test",
      ownerPassword: "password-c",
    });
    const created = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Once" } });

    // The broker stores the message, then the process "dies" before the row is marked.
    const crashingBus: EventBus = {
      ...bus,
      kind: bus.kind,
      publish: async (subject, data, msgId) => {
        await bus.publish(subject, data, msgId);
        throw new Error("process died before marking the row sent");
      },
    };
    const { orm } = svc.app;
    const logger = createLogger("test", "silent");
    const dying = new OutboxRelay({
      orm,
      schema: ORGANISATION_SCHEMA,
      bus: crashingBus,
      logger,
      pollMs: 100,
      leaseMs: 500,
      publishTimeoutMs: 100,
    });
    const first = await dying.publishBatch();
    expect(first.leader).toBe(true);
    expect(first.published).toBe(0);
    expect(first.error).toBeInstanceOf(Error);
    expect(await svc.app.relay.backlog()).toBe(1);

    // After the restart, a relay publishes the row again once the dead one's lease
    // has run out; JetStream drops the duplicate.
    const restarted = new OutboxRelay({ orm, schema: ORGANISATION_SCHEMA, bus, logger, pollMs: 100 });
    cleanups.push(() => restarted.stop()); // hands the lease back for the next test
    expect(await restarted.publishBatch()).toEqual({ leader: false, published: 0 });
    const second = await waitFor(
      async () => {
        const batch = await restarted.publishBatch();
        return batch.leader ? batch : undefined;
      },
      10_000,
      "the dead relay's lease to run out",
    );
    expect(second).toEqual({ leader: true, published: 1, error: undefined });
    expect(await svc.app.relay.backlog()).toBe(0);

    const stored = (await readStream(nats.url, config.NATS_STREAM)).filter(
      (s) => s.event.contact?.id === created.contact!.id,
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]!.event.type).toBe(EventType.CONTACT_CREATED);
  });

  it("a service killed between commit and publish publishes after it restarts: nothing lost, nothing doubled", async () => {
    const config = testConfig({ NATS_URL: nats.url });
    const port = await freePort();
    const env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_MAX: String(db.poolMax),
      NATS_URL: nats.url,
      NATS_STREAM: config.NATS_STREAM,
      NATS_SUBJECT_PREFIX: config.NATS_SUBJECT_PREFIX,
      ORGANISATION_RPC_PORT: String(port),
      INTERNAL_RPC_TOKEN: "k".repeat(40),
      LOG_LEVEL: "warn",
      OUTBOX_POLL_MS: "100",
      OUTBOX_LEASE_MS: "1000",
      OUTBOX_PUBLISH_TIMEOUT_MS: "300",
    };
    const start = async () => {
      const proc = spawnTs("services/organisation/main.ts", env);
      cleanups.push(() => proc.kill("SIGKILL"));
      await httpReady(`http://127.0.0.1:${port}/healthz`, 60_000, proc);
      return proc;
    };
    const client = createRpcClient(OrganisationService, {
      baseUrl: `http://127.0.0.1:${port}`,
      timeoutMs: 10_000,
      internalToken: env.INTERNAL_RPC_TOKEN,
    });
    let proc: Spawned = await start();
    const { organisation } = await client.createOrganisation({
      name: "Kill",
      ownerEmail: "k@kill.test",
      ownerPassword: "password-k",
    });
    const before = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Published" } });
    await waitFor(
      async () => ((await readStream(nats.url, config.NATS_STREAM).catch(() => [])).length === 1 ? true : undefined),
      20_000,
      "first event in the stream",
    );

    // The broker goes away; the next changes commit but cannot be published. Then the process is killed.
    await nats.stop();
    const during = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Committed" } });
    await client.updateContact({
      id: during.contact!.id,
      organisationId: organisation!.id,
      fields: { email: "committed@kill.test" },
    });
    expect(await proc.kill("SIGKILL")).toBe(null);
    const refused = await client
      .getContact({ id: during.contact!.id, organisationId: organisation!.id })
      .catch((e) => e);
    expect(ConnectError.from(refused).code).toBe(Code.Unavailable);

    await nats.restart();
    proc = await start();
    await waitFor(
      async () => ((await readStream(nats.url, config.NATS_STREAM)).length >= 3 ? true : undefined),
      45_000,
      "events published after the restart",
    );
    // A clean stop finishes the relay's batch in hand: after it, nothing more can arrive.
    expect(await proc.kill("SIGTERM")).toBe(0);
    const stored = await readStream(nats.url, config.NATS_STREAM);
    expect(stored.map((s) => [s.event.contact?.id, s.event.type])).toEqual([
      [before.contact!.id, EventType.CONTACT_CREATED],
      [during.contact!.id, EventType.CONTACT_CREATED],
      [during.contact!.id, EventType.CONTACT_UPDATED],
    ]);
    expect(Object.values(countBy(stored.map((s) => s.msgId))).every((n) => n === 1)).toBe(true);
    expect(stored[2]!.event.contact?.email).toBe("committed@kill.test");
  });
});
