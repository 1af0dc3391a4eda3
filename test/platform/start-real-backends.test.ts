// `npm start` with DATABASE_URL and NATS_URL set: the same command runs on
// PostgreSQL and NATS JetStream, and a contact change appears once on the
// stream. (On a machine without them: a private PostgreSQL server, started
// from the machine's binaries, and a private nats-server stand in, reached by
// URL all the same. Not PGlite: the test reads the outbox over a session of its
// own beside the platform's pool, and PGlite serves one session.)
import { rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { backendMode, createTestDatabase, TEST_NATS_URL, uniqueName, type TestDatabase } from "../support/backends.js";
import { NatsServer, httpReady, platformPorts, spawnProcess, waitFor, type Spawned } from "../support/processes.js";
import { unpublishedOutboxRows } from "../support/outbox.js";
import { deleteStream, readStream } from "../support/stream.js";

let db: TestDatabase;
let privateNats: NatsServer | undefined;
let natsUrl: string;
let platform: Spawned | undefined;
const stream = uniqueName("T_");
const env: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase({ sessions: "many" });
  if (backendMode().nats) natsUrl = TEST_NATS_URL;
  else {
    privateNats = await NatsServer.start();
    natsUrl = privateNats.url;
  }
  Object.assign(env, {
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: String(db.poolMax),
    NATS_URL: natsUrl,
    NATS_STREAM: stream,
    NATS_SUBJECT_PREFIX: uniqueName("t"),
    INTERNAL_RPC_TOKEN: "s".repeat(40),
    DATA_DIR: await mkdtemp(path.join(tmpdir(), "bizcard-real-")),
    ...(await platformPorts()),
    LOG_LEVEL: "warn",
  });
});

afterAll(async () => {
  if (platform && platform.child.exitCode === null) process.kill(-platform.child.pid!, "SIGTERM");
  await platform?.exited;
  await deleteStream(natsUrl, stream).catch(() => undefined);
  await privateNats?.close();
  await db?.drop();
  if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true });
});

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  const p = spawnProcess(process.execPath, ["bin/bizcard.js", ...args, "--json"], env);
  return p.exited.then((code) => ({ code, out: p.output() }));
}

describe("npm start on PostgreSQL and NATS JetStream", () => {
  it("serves /readyz, and a contact change appears exactly once on the stream", async () => {
    platform = spawnProcess("npm", ["start", "--silent"], env);
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 120_000, platform);
    expect(platform.output()).toContain("(PostgreSQL, NATS JetStream)");
    expect(platform.output()).toContain("demo data (empty database):"); // a database with no organisation gets the demo

    const org = await cli([
      "org",
      "create",
      "--name",
      "Real",
      "--email",
      "real@backends.test",
      "--password",
      "password-real",
    ]);
    expect(org.code).toBe(0);
    const orgId = JSON.parse(org.out).organisation.id;
    const contact = await cli(["contact", "create", "--org", orgId, "--first-name", "Grace", "--last-name", "Hopper"]);
    expect(contact.code).toBe(0);
    const contactId = JSON.parse(contact.out).id;

    const stored = await waitFor(
      async () => {
        const all = await readStream(natsUrl, stream).catch(() => []);
        return all.length > 0 ? all : undefined;
      },
      20_000,
      "the event on the stream",
    );
    // Nothing more arrives: the organisation service has nothing left to publish.
    await waitFor(
      async () => ((await unpublishedOutboxRows(db.url)) === 0 ? true : undefined),
      20_000,
      "an empty outbox",
    );
    const again = await readStream(natsUrl, stream);
    expect(again).toHaveLength(1);
    expect(stored[0]!.event.type).toBe(EventType.CONTACT_CREATED);
    expect(stored[0]!.event.contact?.id).toBe(contactId);
    expect(stored[0]!.event.contact?.lastName).toBe("Hopper");
    expect(stored[0]!.msgId).toBe(stored[0]!.event.eventId);
  }, 180_000);
});
