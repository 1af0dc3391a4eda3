// Nothing lost, nothing doubled: the organisation service's outbox relay
// with two replicas on a slow bus, a lease renewal that hangs, and
// transactions that commit in the opposite order of their inserts. On NATS,
// across a restart, a kill and a crash: outbox-relay-nats.test.ts.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { ORGANISATION_SCHEMA } from "../../services/organisation/organisation-service.js";
import { createLogger } from "../../services/shared/logger.js";
import { OutboxRelay } from "../../services/shared/outbox/relay.js";
import { enqueueEvent } from "../../services/shared/outbox/writer.js";
import { createOrganisationApp } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import {
  cleanups,
  contactOf,
  countBy,
  db,
  slowConsumer,
  startOnRecordingBus,
  useOutboxRelaySuite,
} from "../support/outbox-relay-suite.js";

useOutboxRelaySuite();

describe("outbox relay", () => {
  it("two replicas with a 1 s lease on a slow bus: 30 events, exactly 30 publishes, in commit order", async () => {
    // The scenario: 30 rows, 80 ms per publish (the consumer is slow, and the
    // in-process bus publishes through it), so one batch outlasts the 1 s lease.
    const { platform, bus, publishes } = await startOnRecordingBus({
      OUTBOX_LEASE_MS: "1000",
      OUTBOX_PUBLISH_TIMEOUT_MS: "300",
    });
    const first = platform.organisation;
    const second = await platform.startService(createOrganisationApp, platform.config);
    // The services' own relays wait while the backlog builds up.
    await first.app.relay.stop();
    await second.app.relay.stop();
    const received: string[] = [];
    await bus.consume({ durable: "slow", subject: "contact.>" }, async (m) => {
      received.push(m.msgId);
      await slowConsumer(80);
    });
    const client = first.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Lease",
      ownerEmail: "o@lease.test",
      ownerPassword: "password-l",
    });
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      ids.push(
        (await client.createContact({ organisationId: organisation!.id, fields: { firstName: `L${i}` } })).contact!.id,
      );
    }

    const logger = createLogger("test", "silent");
    const relay = (app: typeof first.app) =>
      new OutboxRelay({
        orm: app.orm,
        schema: ORGANISATION_SCHEMA,
        bus,
        logger,
        pollMs: 50,
        leaseMs: 1000,
        publishTimeoutMs: 300,
      });
    const relays = [relay(first.app), relay(second.app)];
    for (const r of relays) r.start();
    cleanups.push(() => Promise.all(relays.map((r) => r.stop())));
    const mine = () => publishes.filter((p) => contactOf(p.data).organisationId === organisation!.id);
    await waitFor(
      () => (new Set(mine().map((p) => p.msgId)).size === 30 ? true : undefined),
      60_000,
      "30 events published",
    );
    // Stopping waits for any batch in hand: after this, nothing more is published.
    await Promise.all(relays.map((r) => r.stop()));

    const published = mine();
    expect(published).toHaveLength(30);
    expect(Object.values(countBy(published.map((p) => p.msgId))).every((n) => n === 1)).toBe(true);
    expect(published.map((p) => contactOf(p.data).contactId)).toEqual(ids);
    expect(received.filter((id) => published.some((p) => p.msgId === id))).toEqual(published.map((p) => p.msgId));
  });

  it("a relay whose lease renewal hangs publishes nothing more, and ends its batch once another relay holds the lease", async () => {
    const { platform, bus, publishes } = await startOnRecordingBus();
    const svc = platform.organisation;
    await svc.app.relay.stop();
    await bus.consume({ durable: "slow", subject: "contact.>" }, async () => {
      await slowConsumer(80);
    });
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Hang",
      ownerEmail: "o@hang.test",
      ownerPassword: "password-h",
    });
    for (let i = 0; i < 30; i++)
      await client.createContact({ organisationId: organisation!.id, fields: { firstName: `H${i}` } });
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
    const batch = waitFor(
      async () => {
        const b = await relay.publishBatch();
        return b.leader ? b : undefined;
      },
      30_000,
      "the lease",
    );
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
          .execute(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%outbox_lease%'`,
          );
        return rows.length === 1 ? true : undefined;
      },
      20_000,
      "the relay's renewal waiting on the lock",
    );
    const beforeHang = mine().length;
    expect(beforeHang).toBeLessThan(30);

    // The relay's lease runs out while its renewal hangs; another relay takes it over.
    await waitFor(
      async () => {
        const { rows } = await blocker.query(
          `select "expires_at" < clock_timestamp() as expired from "${ORGANISATION_SCHEMA}"."outbox_lease"`,
        );
        return rows[0].expired ? true : undefined;
      },
      20_000,
      "the hanging relay's lease expired",
    );
    await blocker.query(
      `update "${ORGANISATION_SCHEMA}"."outbox_lease" set "holder" = 'another relay', "expires_at" = clock_timestamp() + interval '1 minute'`,
    );
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
    await waitFor(
      async () => {
        await relay.publishBatch();
        return (await relay.backlog()) === 0 ? true : undefined;
      },
      30_000,
      "the rest published",
    );
    expect(mine()).toHaveLength(30);
    expect(Object.values(countBy(mine().map((p) => p.msgId))).every((k) => k === 1)).toBe(true);
  });

  it("one organisation's events leave in the order their transactions committed, not the order they were inserted", async () => {
    const { platform, bus, publishes } = await startOnRecordingBus();
    const { config } = platform;
    const svc = platform.organisation;
    await svc.app.relay.stop();
    await bus.consume({ durable: "order", subject: "order.>" }, async () => undefined);
    const { orm } = svc.app;
    const event = (name: string) => ({
      id: randomUUID(),
      subject: `${config.NATS_SUBJECT_PREFIX}.order.${name}`,
      payload: new Uint8Array(),
      orderKey: "org-a",
    });
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

    const relay = new OutboxRelay({
      orm,
      schema: ORGANISATION_SCHEMA,
      bus,
      logger: createLogger("test", "silent"),
      pollMs: 100,
    });
    const batch = await waitFor(
      async () => {
        const b = await relay.publishBatch();
        return b.leader ? b : undefined;
      },
      30_000,
      "the lease",
    );
    expect(batch.error).toBeUndefined();
    await relay.stop();
    const order = publishes.map((p) => p.msgId).filter((id) => id === early.id || id === late.id);
    expect(order).toEqual(committed);
  });

  it("another organisation's event does not wait for an open transaction's, and the relay still sends the one with the lower seq once it commits", async () => {
    const { platform, bus, publishes } = await startOnRecordingBus();
    const { config } = platform;
    const svc = platform.organisation;
    await svc.app.relay.stop();
    await bus.consume({ durable: "keys", subject: "keys.>" }, async () => undefined);
    const { orm } = svc.app;
    const event = (name: string, orderKey: string) => ({
      id: randomUUID(),
      subject: `${config.NATS_SUBJECT_PREFIX}.keys.${name}`,
      payload: new Uint8Array(),
      orderKey,
    });
    const early = event("early", "org-a");
    const late = event("late", "org-b");

    // "early" (organisation A) takes the lower seq and stays open; "late" (organisation B) commits meanwhile.
    let finishEarly!: () => void;
    const earlyOpen = new Promise<void>((r) => (finishEarly = r));
    let earlyInserted!: () => void;
    const earlyHasInserted = new Promise<void>((r) => (earlyInserted = r));
    const earlyTx = orm.em.fork().transactional(async (em) => {
      await enqueueEvent(em, ORGANISATION_SCHEMA, early);
      earlyInserted();
      await earlyOpen;
    });
    await earlyHasInserted;
    await orm.em.fork().transactional((em) => enqueueEvent(em, ORGANISATION_SCHEMA, late));

    const relay = new OutboxRelay({
      orm,
      schema: ORGANISATION_SCHEMA,
      bus,
      logger: createLogger("test", "silent"),
      pollMs: 100,
    });
    cleanups.push(() => relay.stop());
    const mine = () => publishes.map((p) => p.msgId).filter((id) => id === early.id || id === late.id);
    // B's event goes while A's transaction is still open ...
    await waitFor(
      async () => ((await relay.publishBatch()).leader && mine().length > 0 ? true : undefined),
      30_000,
      "B's event published",
    );
    expect(mine()).toEqual([late.id]);
    // ... and A's, with the lower seq, once it commits: a read after the last row sent would skip it.
    finishEarly();
    await earlyTx;
    await waitFor(
      async () => ((await relay.publishBatch()).leader && mine().length === 2 ? true : undefined),
      30_000,
      "A's event published",
    );
    expect(mine()).toEqual([late.id, early.id]);
    expect(await relay.backlog()).toBe(0);
  });
});
