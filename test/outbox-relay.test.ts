// Nothing lost, nothing doubled: the organisation service's outbox relay
// with two replicas on a slow bus, a lease renewal that hangs, transactions
// that commit in the opposite order of their inserts, across a NATS restart,
// a process kill between commit and publish, and a crash between publish and
// marking the row sent. The file runs its own nats-server on a free port (the
// shared one is never stopped).
import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ContactEventSchema, EventType } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { ORGANISATION_SCHEMA } from "../services/organisation/organisation-service.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { InProcessBus } from "../services/shared/event-bus/in-process-bus.js";
import { createLogger } from "../services/shared/logger.js";
import { OutboxRelay, enqueueEvent } from "../services/shared/outbox.js";
import { createRpcClient } from "../services/shared/rpc-client.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { createOrganisationApp } from "./support/platform.js";
import { NatsServer, freePort, httpReady, spawnTs, waitFor, type Spawned } from "./support/processes.js";
import { openTestBus, startService } from "./support/services.js";
import { readStream } from "./support/stream.js";

let nats: NatsServer;
let db: TestDatabase;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  nats = await NatsServer.start();
  db = await createTestDatabase({ sessions: "many" }); // row and advisory locks need concurrent sessions
});

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
  // Rows a failed test left unsent carry its own subject prefix, which no later bus
  // serves: set them aside so that one failure does not take the next tests down too.
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  await c.query(`update "${ORGANISATION_SCHEMA}"."outbox" set "published_at" = now() where "published_at" is null`).catch(() => undefined);
  await c.end();
});

afterAll(async () => {
  await nats?.stop();
  await db?.drop();
});

const countBy = (ids: string[]) => ids.reduce<Record<string, number>>((m, id) => ((m[id] = (m[id] ?? 0) + 1), m), {});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real bus (the in-process one) that records every publish call: what the relays asked the broker to store. */
function recordingBus(inner: EventBus) {
  const publishes: { msgId: string; subject: string; data: Uint8Array }[] = [];
  const bus: EventBus = {
    kind: inner.kind,
    publish: async (subject, data, msgId) => {
      publishes.push({ msgId, subject, data });
      await inner.publish(subject, data, msgId);
    },
    consume: (options, handler) => inner.consume(options, handler),
    subscribe: (subject, handler) => inner.subscribe(subject, handler),
    get connected() {
      return inner.connected;
    },
    onConnectionChange: (listener) => inner.onConnectionChange(listener),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { bus, publishes };
}

/** Organisation id and contact id of a published contact event. */
const contactOf = (data: Uint8Array) => {
  const event = fromBinary(ContactEventSchema, data);
  return { organisationId: event.organisationId, contactId: event.contact?.id ?? "" };
};

describe("outbox relay", () => {
  it("two replicas with a 1 s lease on a slow bus: 30 events, exactly 30 publishes, in commit order", async () => {
    // The scenario: 30 rows, 80 ms per publish (the consumer is slow, and the
    // in-process bus publishes through it), so one batch outlasts the 1 s lease.
    const config = testConfig({ NATS_URL: "", OUTBOX_LEASE_MS: "1000", OUTBOX_PUBLISH_TIMEOUT_MS: "300" });
    const { bus, publishes } = recordingBus(new InProcessBus(config.NATS_SUBJECT_PREFIX));
    const first = await startService(createOrganisationApp, { config, db, bus });
    const second = await startService(createOrganisationApp, { config, db, bus });
    cleanups.push(() => first.stop(), () => second.stop());
    // The services' own relays wait while the backlog builds up.
    await first.app.relay.stop();
    await second.app.relay.stop();
    const received: string[] = [];
    await bus.consume({ durable: "slow", subject: "contact.>" }, async (m) => {
      received.push(m.msgId);
      await sleep(80);
    });
    const client = first.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Lease", ownerEmail: "o@lease.test", ownerPassword: "password-l" });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push((await client.createContact({ organisationId: organisation!.id, fields: { firstName: `L${i}` } })).contact!.id);
    }

    const logger = createLogger("test", "silent");
    const relay = (app: typeof first.app) =>
      new OutboxRelay({ orm: app.orm, schema: ORGANISATION_SCHEMA, bus, logger, pollMs: 50, leaseMs: 1000, publishTimeoutMs: 300 });
    const relays = [relay(first.app), relay(second.app)];
    for (const r of relays) r.start();
    cleanups.push(() => Promise.all(relays.map((r) => r.stop())));
    const mine = () => publishes.filter((p) => contactOf(p.data).organisationId === organisation!.id);
    await waitFor(() => (new Set(mine().map((p) => p.msgId)).size === 30 ? true : undefined), 60_000, "30 events published");
    // Stopping waits for any batch in hand: after this, nothing more is published.
    await Promise.all(relays.map((r) => r.stop()));

    const published = mine();
    expect(published).toHaveLength(30);
    expect(Object.values(countBy(published.map((p) => p.msgId))).every((n) => n === 1)).toBe(true);
    expect(published.map((p) => contactOf(p.data).contactId)).toEqual(ids);
    expect(received.filter((id) => published.some((p) => p.msgId === id))).toEqual(published.map((p) => p.msgId));
  });

  it("a relay whose lease renewal hangs publishes nothing more, and ends its batch once another relay holds the lease", async () => {
    const config = testConfig({ NATS_URL: "" });
    const { bus, publishes } = recordingBus(new InProcessBus(config.NATS_SUBJECT_PREFIX));
    const svc = await startService(createOrganisationApp, { config, db, bus });
    cleanups.push(() => svc.stop());
    await svc.app.relay.stop();
    await bus.consume({ durable: "slow", subject: "contact.>" }, async () => {
      await sleep(80);
    });
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Hang", ownerEmail: "o@hang.test", ownerPassword: "password-h" });
    for (let i = 0; i < 30; i++) await client.createContact({ organisationId: organisation!.id, fields: { firstName: `H${i}` } });
    const mine = () => publishes.filter((p) => contactOf(p.data).organisationId === organisation!.id);

    const relay = new OutboxRelay({
      orm: svc.app.orm,
      schema: ORGANISATION_SCHEMA,
      bus,
      logger: createLogger("test", "silent"),
      pollMs: 50,
      leaseMs: 1000,
      publishTimeoutMs: 300,
    });
    const batch = waitFor(async () => {
      const b = await relay.publishBatch();
      return b.leader ? b : undefined;
    }, 30_000, "the lease");
    await waitFor(() => (mine().length > 0 ? true : undefined), 30_000, "the relay publishing");

    // Another session locks the lease row: the relay's next renewal waits on it.
    const blocker = new pg.Client({ connectionString: db.url });
    await blocker.connect();
    cleanups.push(async () => {
      await blocker.query("rollback").catch(() => undefined);
      // Hand the lease back at once for the tests that follow.
      await blocker.query(`update "${ORGANISATION_SCHEMA}"."outbox_lease" set "expires_at" = now()`);
      await blocker.end();
    });
    await blocker.query("begin");
    await blocker.query(`select * from "${ORGANISATION_SCHEMA}"."outbox_lease" for update`);
    await waitFor(
      async () => {
        // Asked outside the blocker's transaction, which would see a frozen pg_stat_activity.
        const rows: unknown[] = await svc.app.orm.em
          .fork()
          .execute(`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%outbox_lease%'`);
        return rows.length === 1 ? true : undefined;
      },
      20_000,
      "the relay's renewal waiting on the lock",
    );
    const beforeHang = mine().length;
    expect(beforeHang).toBeLessThan(30);

    // The relay's lease runs out while its renewal hangs; another relay takes it over.
    await waitFor(async () => {
      const { rows } = await blocker.query(`select "expires_at" < clock_timestamp() as expired from "${ORGANISATION_SCHEMA}"."outbox_lease"`);
      return rows[0].expired ? true : undefined;
    }, 20_000, "the hanging relay's lease expired");
    await blocker.query(`update "${ORGANISATION_SCHEMA}"."outbox_lease" set "holder" = 'another relay', "expires_at" = clock_timestamp() + interval '1 minute'`);
    await blocker.query("commit");

    expect(await batch).toEqual({ leader: true, published: beforeHang, error: undefined, leaseLost: true });
    expect(mine()).toHaveLength(beforeHang);
    // What it published before the hang is marked sent: the next holder starts after it.
    const [{ n }] = await svc.app.orm.em
      .fork()
      .execute(`select count(*)::int as n from "${ORGANISATION_SCHEMA}"."outbox" where "published_at" is null`);
    expect(n).toBe(30 - beforeHang);

    // Once the lease is free again, the rest goes out, and only the rest.
    await blocker.query(`update "${ORGANISATION_SCHEMA}"."outbox_lease" set "expires_at" = now()`);
    await waitFor(async () => {
      await relay.publishBatch();
      return (await relay.backlog()) === 0 ? true : undefined;
    }, 30_000, "the rest published");
    expect(mine()).toHaveLength(30);
    expect(Object.values(countBy(mine().map((p) => p.msgId))).every((k) => k === 1)).toBe(true);
  });

  it("events leave in the order their transactions committed, not the order they were inserted", async () => {
    const config = testConfig({ NATS_URL: "" });
    const { bus, publishes } = recordingBus(new InProcessBus(config.NATS_SUBJECT_PREFIX));
    const svc = await startService(createOrganisationApp, { config, db, bus });
    cleanups.push(() => svc.stop());
    await svc.app.relay.stop();
    await bus.consume({ durable: "order", subject: "order.>" }, async () => undefined);
    const { orm } = svc.app;
    const event = (name: string) => ({ id: randomUUID(), subject: `${config.NATS_SUBJECT_PREFIX}.order.${name}`, payload: new Uint8Array() });
    const early = event("early");
    const late = event("late");
    const committed: string[] = [];

    // "early" inserts its event first and stays open; "late" inserts after it and tries to commit first.
    let finishEarly!: () => void;
    const earlyOpen = new Promise<void>((r) => (finishEarly = r));
    let earlyInserted!: () => void;
    const earlyHasInserted = new Promise<void>((r) => (earlyInserted = r));
    const earlyTx = orm.em
      .fork()
      .transactional(async (em) => {
        await enqueueEvent(em, ORGANISATION_SCHEMA, early);
        earlyInserted();
        await earlyOpen;
      })
      .then(() => committed.push(early.id));
    await earlyHasInserted;
    const lateTx = orm.em
      .fork()
      .transactional((em) => enqueueEvent(em, ORGANISATION_SCHEMA, late))
      .then(() => committed.push(late.id));
    const probe = orm.em.fork();
    await waitFor(
      async () => {
        if (committed.includes(late.id)) return true;
        const waiting: unknown[] = await probe.execute(
          `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        );
        return waiting.length > 0 ? true : undefined;
      },
      20_000,
      "the late transaction committed or waiting",
    );
    finishEarly();
    await Promise.all([earlyTx, lateTx]);

    const relay = new OutboxRelay({ orm, schema: ORGANISATION_SCHEMA, bus, logger: createLogger("test", "silent"), pollMs: 100 });
    const batch = await waitFor(async () => {
      const b = await relay.publishBatch();
      return b.leader ? b : undefined;
    }, 30_000, "the lease");
    expect(batch.error).toBeUndefined();
    await relay.stop();
    const order = publishes.map((p) => p.msgId).filter((id) => id === early.id || id === late.id);
    expect(order).toEqual(committed);
  });

  it("with two relays on NATS, the stream holds each event once, in commit order", async () => {
    const config = testConfig({ NATS_URL: nats.url });
    const bus = await openTestBus(config);
    const svc = await startService(createOrganisationApp, { config, db, bus });
    const logger = createLogger("test", "silent");
    const replica = new OutboxRelay({ orm: svc.app.orm, schema: ORGANISATION_SCHEMA, bus, logger, pollMs: 20 });
    replica.start();
    cleanups.push(() => bus.close(), () => svc.stop(), () => replica.stop());
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Replicas", ownerEmail: "r@replicas.test", ownerPassword: "password-r" });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      ids.push((await client.createContact({ organisationId: organisation!.id, fields: { firstName: `R${i}` } })).contact!.id);
    }
    await waitFor(async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined), 20_000, "backlog drained");
    const stored = (await readStream(nats.url, config.NATS_STREAM)).filter((s) => s.event.organisationId === organisation!.id);
    expect(stored.map((s) => s.event.contact?.id)).toEqual(ids);
  });

  it("on the in-process bus, an event with no consumer yet waits in the outbox, then goes out", async () => {
    const config = testConfig({ NATS_URL: "" });
    const inner = new InProcessBus(config.NATS_SUBJECT_PREFIX);
    const refused: string[] = [];
    const bus: EventBus = {
      kind: inner.kind,
      publish: (subject, data, msgId) => inner.publish(subject, data, msgId).catch((err) => (refused.push(msgId), Promise.reject(err))),
      consume: (options, handler) => inner.consume(options, handler),
      subscribe: (subject, handler) => inner.subscribe(subject, handler),
      connected: true,
      onConnectionChange: (listener) => inner.onConnectionChange(listener),
      ping: () => inner.ping(),
      close: () => inner.close(),
    };
    const svc = await startService(createOrganisationApp, { config, db, bus });
    cleanups.push(() => svc.stop());
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Later", ownerEmail: "l@later.test", ownerPassword: "password-l" });
    const { contact } = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Waiting" } });
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
    const config = testConfig({ NATS_URL: nats.url });
    const bus = await openTestBus(config);
    // The real bus, counting the publishes the broker refused.
    let refused = 0;
    const publish = bus.publish.bind(bus);
    bus.publish = (...args) => publish(...args).catch((err) => (refused++, Promise.reject(err)));
    const svc = await startService(createOrganisationApp, { config, db, bus });
    cleanups.push(() => bus.close(), () => svc.stop());
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Restart", ownerEmail: "r@restart.test", ownerPassword: "password-r" });
    const a = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Before" } });
    await waitFor(async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined), 15_000, "first event published");

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
    const config = testConfig({ NATS_URL: nats.url });
    const bus = await openTestBus(config);
    // The relay is stopped: this test drives it by hand.
    const svc = await startService(createOrganisationApp, { config, db, bus });
    await svc.app.relay.stop();
    cleanups.push(() => bus.close(), () => svc.stop());
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({ name: "Crash", ownerEmail: "c@crash.test", ownerPassword: "password-c" });
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
    const dying = new OutboxRelay({ orm, schema: ORGANISATION_SCHEMA, bus: crashingBus, logger, pollMs: 100, leaseMs: 500, publishTimeoutMs: 100 });
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
    const second = await waitFor(async () => {
      const batch = await restarted.publishBatch();
      return batch.leader ? batch : undefined;
    }, 10_000, "the dead relay's lease to run out");
    expect(second).toEqual({ leader: true, published: 1, error: undefined });
    expect(await svc.app.relay.backlog()).toBe(0);

    const stored = (await readStream(nats.url, config.NATS_STREAM)).filter((s) => s.event.contact?.id === created.contact!.id);
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
    const { organisation } = await client.createOrganisation({ name: "Kill", ownerEmail: "k@kill.test", ownerPassword: "password-k" });
    const before = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Published" } });
    await waitFor(
      async () => ((await readStream(nats.url, config.NATS_STREAM).catch(() => [])).length === 1 ? true : undefined),
      20_000,
      "first event in the stream",
    );

    // The broker goes away; the next changes commit but cannot be published. Then the process is killed.
    await nats.stop();
    const during = await client.createContact({ organisationId: organisation!.id, fields: { firstName: "Committed" } });
    await client.updateContact({ id: during.contact!.id, organisationId: organisation!.id, fields: { email: "committed@kill.test" } });
    expect(await proc.kill("SIGKILL")).toBe(null);
    const refused = await client.getContact({ id: during.contact!.id, organisationId: organisation!.id }).catch((e) => e);
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
