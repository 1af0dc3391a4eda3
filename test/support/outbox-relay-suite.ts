// The outbox relay's suites: a private nats-server on a free port (the shared
// one is never stopped), a database that gives several sessions at once (row
// and advisory locks), cleanups run after each test, and a bus that records
// every publish. The organisation service starts through the platform fixture
// (startOrganisation), on the bus the test builds from the platform's config.
// Each suite file calls useOutboxRelaySuite() once.
import { fromBinary } from "@bufbuild/protobuf";
import pg from "pg";
import { afterAll, afterEach, beforeAll } from "vitest";
import { ContactEventSchema } from "../../gen/bizcard/events/v1/events_pb.js";
import { ORGANISATION_SCHEMA } from "../../services/organisation/organisation-service.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { createTestDatabase, type TestDatabase } from "./backends.js";
import { startPlatform, type Platform, type PlatformOptions } from "./platform.js";
import { NatsServer } from "./processes.js";

export let nats: NatsServer;
export let db: TestDatabase;
export const cleanups: (() => Promise<unknown>)[] = [];

export const countBy = (ids: string[]) =>
  ids.reduce<Record<string, number>>((m, id) => ((m[id] = (m[id] ?? 0) + 1), m), {});
/**
 * A slow consumer's time with one message: a latency the lease scenarios need, not a wait for a condition. The
 * lease runs on PostgreSQL's clock, so only a batch that takes real time outlasts it (each publish within its timeout).
 */
export const slowConsumer = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** A real bus (the in-process one) that records every publish call: what the relays asked the broker to store. */
export function recordingBus(inner: EventBus) {
  const publishes: { msgId: string; subject: string; data: Uint8Array }[] = [];
  const bus: EventBus = {
    kind: inner.kind,
    publish: async (subject, data, msgId) => {
      publishes.push({ msgId, subject, data });
      await inner.publish(subject, data, msgId);
    },
    consume: (options, handler) => inner.consume(options, handler),
    subscribe: (subject, handler) => inner.subscribe(subject, handler),
    announce: (topic, data) => inner.announce(topic, data),
    listen: (topic, handler) => inner.listen(topic, handler),
    get connected() {
      return inner.connected;
    },
    onConnectionChange: (listener) => inner.onConnectionChange(listener),
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { bus, publishes };
}

/**
 * The organisation service alone on the file's database, with these config
 * values and the bus (or bus factory) given; stopped, with its bus, after the test.
 */
export async function startOrganisation(
  config: Record<string, string>,
  bus?: PlatformOptions["bus"],
): Promise<Platform> {
  const platform = await startPlatform({ db, config, ...(bus ? { bus } : {}) });
  cleanups.push(() => platform.stop());
  return platform;
}

/** The organisation service alone on an in-process bus that records every publish (recordingBus). */
export async function startOnRecordingBus(config: Record<string, string> = {}) {
  let recorded: ReturnType<typeof recordingBus> | undefined;
  const platform = await startOrganisation(
    { NATS_URL: "", ...config },
    (c) => (recorded = recordingBus(new InProcessBus(c.NATS_SUBJECT_PREFIX))).bus,
  );
  return { platform, bus: platform.bus, publishes: recorded!.publishes };
}

/** Organisation id and contact id of a published contact event. */
export const contactOf = (data: Uint8Array) => {
  const event = fromBinary(ContactEventSchema, data);
  return { organisationId: event.organisationId, contactId: event.contact?.id ?? "" };
};

/** Registers the file's platform: started before its tests, stopped after. */
export function useOutboxRelaySuite(): void {
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
    await c
      .query(`update "${ORGANISATION_SCHEMA}"."outbox" set "published_at" = now() where "published_at" is null`)
      .catch(() => undefined);
    await c.end();
  });

  afterAll(async () => {
    await nats?.stop();
    await db?.drop();
  });
}
