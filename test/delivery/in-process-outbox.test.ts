// The embedded start's event path (issue 7, "The in-process bus"): the
// organisation service's outbox relay publishing onto the in-process bus. A
// consumer that fails, or a subject nobody consumes yet, must not hold back
// the events behind it for the other consumers; the failing consumer still
// gets every event, at least once, in commit order, once it recovers.
import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ContactEventSchema } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { ORGANISATION_SCHEMA } from "../../services/organisation/organisation-service.js";
import { NoConsumerError } from "../../services/shared/event-bus/event-bus.js";
import { ConsumersBehindError, InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { enqueueEvent } from "../../services/shared/outbox/writer.js";
import { createTestDatabase, testConfig, type TestDatabase } from "../support/backends.js";
import { waitFor } from "../support/processes.js";
import { startPlatform } from "../support/platform.js";

const bytes = new Uint8Array();

describe("the in-process bus", () => {
  it("a failing consumer is held on its failed message; the others get it and the ones behind it at once", async () => {
    const bus = new InProcessBus("p");
    const flaky: string[] = [];
    const healthy: string[] = [];
    let failuresLeft = 2;
    await bus.consume({ durable: "flaky", subject: "contact.>", retryDelayMs: 50, maxRetryDelayMs: 50 }, async (m) => {
      if (m.msgId === "m1" && failuresLeft-- > 0) throw new Error("target down");
      flaky.push(m.msgId);
    });
    await bus.consume({ durable: "healthy", subject: "contact.>" }, async (m) => void healthy.push(m.msgId));

    const first = await bus.publish("p.contact.created", bytes, "m1").catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ConsumersBehindError);
    expect(first).toMatchObject({ failed: ["flaky"], heldBack: [] });
    // m2 reaches the healthy consumer; the flaky one is not even called: it must take m1 first.
    const second = await bus.publish("p.contact.updated", bytes, "m2").catch((e: unknown) => e);
    expect(second).toMatchObject({ failed: [], heldBack: ["flaky"] });
    expect(healthy).toEqual(["m1", "m2"]);
    expect(flaky).toEqual([]);

    // Published again, oldest first, as the relay does; before the retry delay the flaky one is not called.
    const early = await bus.publish("p.contact.created", bytes, "m1").catch((e: unknown) => e);
    expect(early).toMatchObject({ failed: ["flaky"] });
    expect(failuresLeft).toBe(1);
    await waitFor(
      async () => {
        await bus.publish("p.contact.created", bytes, "m1");
        return true;
      },
      5000,
      "m1 taken by the flaky consumer",
    );
    await bus.publish("p.contact.updated", bytes, "m2");
    expect(flaky).toEqual(["m1", "m2"]);
    // Nothing twice for the healthy one.
    expect(healthy).toEqual(["m1", "m2"]);
  });

  it("a consumer that registers after its subject found none takes the waiting message before newer ones", async () => {
    const bus = new InProcessBus("p");
    await expect(bus.publish("p.contact.created", bytes, "m1")).rejects.toBeInstanceOf(NoConsumerError);
    const got: string[] = [];
    await bus.consume({ durable: "late", subject: "contact.>" }, async (m) => void got.push(m.msgId));
    await expect(bus.publish("p.contact.created", bytes, "m2")).rejects.toMatchObject({ heldBack: ["late"] });
    await bus.publish("p.contact.created", bytes, "m1");
    await bus.publish("p.contact.created", bytes, "m2");
    expect(got).toEqual(["m1", "m2"]);
  });

  it("a message failing every delivery is given up for that consumer after maxDeliver, which then goes on", async () => {
    const bus = new InProcessBus("p");
    const got: string[] = [];
    await bus.consume(
      { durable: "hopeless", subject: "x", retryDelayMs: 1, maxRetryDelayMs: 1, maxDeliver: 3 },
      async (m) => {
        if (m.msgId === "poison") throw new Error("never");
        got.push(m.msgId);
      },
    );
    const outcome = await waitFor(
      async () => {
        const r = await bus.publish("p.x", bytes, "poison").then(
          () => "resolved",
          () => undefined,
        );
        return r;
      },
      5000,
      "poison given up",
    );
    expect(outcome).toBe("resolved");
    await bus.publish("p.x", bytes, "next");
    expect(got).toEqual(["next"]);
  });
});

describe("the outbox relay on the in-process bus", () => {
  let db: TestDatabase;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("a consumer that always fails delays neither another consumer nor later events; once it recovers it gets them all, in order", async () => {
    const config = testConfig({ NATS_URL: "", OUTBOX_POLL_MS: "50" });
    const bus = new InProcessBus(config.NATS_SUBJECT_PREFIX);
    const contactOf = (data: Uint8Array) => fromBinary(ContactEventSchema, data).contact?.firstName ?? "";
    let broken = true;
    const failing: string[] = [];
    let failingCalls = 0;
    const healthy: { name: string; at: number }[] = [];
    const updates: string[] = [];
    // Consumers first, as scripts/start.ts starts them.
    await bus.consume(
      { durable: "broken", subject: "contact.created", retryDelayMs: 100, maxRetryDelayMs: 400, maxDeliver: 1000 },
      async (m) => {
        failingCalls++;
        if (broken) throw new Error("receiver down");
        failing.push(contactOf(m.data));
      },
    );
    await bus.consume(
      { durable: "healthy", subject: "contact.>" },
      async (m) => void healthy.push({ name: contactOf(m.data), at: Date.now() }),
    );
    await bus.consume(
      { durable: "updates", subject: "contact.updated" },
      async (m) => void updates.push(contactOf(m.data)),
    );
    const platform = await startPlatform({
      config: { NATS_URL: "", OUTBOX_POLL_MS: "50", NATS_SUBJECT_PREFIX: config.NATS_SUBJECT_PREFIX },
      db,
      bus,
    });
    cleanups.push(() => platform.stop());
    const svc = platform.organisation;
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Embedded",
      ownerEmail: "o@embedded.test",
      ownerPassword: "password-e",
    });
    const organisationId = organisation!.id;

    const names = ["C0", "C1", "C2", "C3", "C4"];
    const t0 = Date.now();
    const ids: string[] = [];
    for (const firstName of names) {
      ids.push((await client.createContact({ organisationId, fields: { firstName } })).contact!.id);
      // Between C2 and C3, an event of a subject nobody consumes: it waits in the outbox, and holds nothing back.
      if (firstName === "C2") {
        await svc.app.orm.em.fork().transactional((em) =>
          enqueueEvent(em, ORGANISATION_SCHEMA, {
            id: randomUUID(),
            subject: `${config.NATS_SUBJECT_PREFIX}.nobody.listens`,
            payload: bytes,
            orderKey: organisationId,
          }),
        );
      }
    }
    await client.updateContact({ id: ids[1]!, organisationId, fields: { firstName: "C1b" } });

    // The healthy consumer gets all of them promptly, in commit order.
    await waitFor(() => healthy.length >= 6, 10_000, "the healthy consumer's events");
    expect(healthy.map((h) => h.name)).toEqual([...names, "C1b"]);
    expect(Math.max(...healthy.map((h) => h.at)) - t0).toBeLessThan(5000);
    expect(updates).toEqual(["C1b"]);
    // The broken one is retried on its own schedule, and only on its first event: the later ones wait behind it.
    await waitFor(() => failingCalls >= 3, 10_000, "retries of the broken consumer");
    expect(failing).toEqual([]);
    expect(await svc.app.relay.backlog()).toBe(6); // the five creates and the unconsumed one

    // It recovers: it gets every contact.created, each once, in commit order; the outbox keeps only the unconsumed one.
    broken = false;
    await waitFor(() => failing.length >= 5, 10_000, "the recovered consumer's events");
    expect(failing).toEqual(names);
    expect(healthy.map((h) => h.name)).toEqual([...names, "C1b"]);
    await waitFor(async () => ((await svc.app.relay.backlog()) === 1 ? true : undefined), 10_000, "the outbox drained");

    // A consumer of it registers at last: it gets it, and the outbox is empty.
    const late: string[] = [];
    await bus.consume({ durable: "late", subject: "nobody.>" }, async (m) => void late.push(m.msgId));
    await waitFor(
      async () => ((await svc.app.relay.backlog()) === 0 ? true : undefined),
      15_000,
      "the waiting event published",
    );
    expect(late).toHaveLength(1);
  });
});
