// `npm start` with DATABASE_URL on a database with no organisation: the same
// first run as the embedded start (a demo organisation, member and client,
// printed and kept in DATA_DIR), usable at once; a second start on that
// database, which has an organisation now, makes none. The ready banner
// prints the issuer (PUBLIC_URL).
import { readFileSync, rmSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { TEST_NATS_URL, createTestDatabase, uniqueName, type TestDatabase } from "../support/backends.js";
import { httpReady, platformPorts, spawnProcess, type Spawned } from "../support/processes.js";
import { deleteStream } from "../support/stream.js";

let db: TestDatabase;
const stream = uniqueName("T_");
const env: Record<string, string> = {};
let platform: Spawned | undefined;

beforeAll(async () => {
  db = await createTestDatabase({ sessions: "many" });
  Object.assign(env, {
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: String(db.poolMax),
    NATS_URL: TEST_NATS_URL,
    NATS_STREAM: stream,
    NATS_SUBJECT_PREFIX: uniqueName("t"),
    INTERNAL_RPC_TOKEN: "d".repeat(40),
    DATA_DIR: await mkdtemp(path.join(tmpdir(), "bizcard-real-demo-")),
    ...(await platformPorts()),
    LOG_LEVEL: "warn",
  });
});

afterAll(async () => {
  if (platform && platform.child.exitCode === null) process.kill(-platform.child.pid!, "SIGTERM");
  await platform?.exited;
  await deleteStream(TEST_NATS_URL, stream).catch(() => undefined);
  await db?.drop();
  if (env.DATA_DIR) rmSync(env.DATA_DIR, { recursive: true, force: true });
});

async function start(): Promise<string> {
  platform = spawnProcess("npm", ["start", "--silent"], env);
  await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 120_000, platform);
  return platform.output();
}

async function stop(): Promise<void> {
  process.kill(-platform!.child.pid!, "SIGTERM");
  expect(await platform!.exited).toBe(0);
}

describe("npm start on a PostgreSQL database with no organisation", () => {
  it("creates and prints the demo organisation, member and client, which work at once; a second start makes none", async () => {
    const out = await start();
    // A cold start says what it is doing before "ready".
    const steps = out
      .slice(0, out.indexOf("bizcard platform ready"))
      .split("\n")
      .filter((l) => l.startsWith("bizcard: "));
    expect(steps).toEqual([
      `bizcard: connecting to NATS at ${env.NATS_URL}`,
      ...["delivery", "webhook", "auth", "organisation"].map(
        (name) => `bizcard: starting ${name}: migrating its schema`,
      ),
      "bizcard: starting the background work (outbox relays, event consumers, delivery)",
      "bizcard: creating the demo organisation, member and client",
      "bizcard: starting the gateway",
    ]);
    expect(out).toContain("(PostgreSQL, NATS JetStream)");
    expect(out).toContain("  demo data (empty database):\n");
    // The banner names the issuer: PUBLIC_URL, here unset, so the default on GATEWAY_PORT.
    expect(out).toContain(`  issuer (PUBLIC_URL): http://localhost:${env.GATEWAY_PORT}\n`);
    const file = path.join(env.DATA_DIR!, "demo-credentials.json");
    const demo = JSON.parse(readFileSync(file, "utf8")) as {
      organisation: { id: string; name: string };
      member: { email: string; password: string };
      client: { client_id: string; client_secret: string };
    };
    expect(out).toContain(`    organisation   Demo Organisation (${demo.organisation.id})\n`);
    expect(out).toContain(`    member login   demo@example.com / ${demo.member.password}\n`);
    expect(out).toContain(`    OAuth client   client_id=${demo.client.client_id}\n`);
    expect(out).toContain(`                   client_secret=${demo.client.client_secret}\n`);
    expect(out).toContain(`    (kept in ${file})\n`);

    // The member signs in with the printed password; the client is the one printed, with its redirect URI.
    const rpc = { timeoutMs: 10_000, internalToken: env.INTERNAL_RPC_TOKEN };
    const organisations = createRpcClient(OrganisationService, {
      baseUrl: `http://127.0.0.1:${env.ORGANISATION_RPC_PORT}`,
      ...rpc,
    });
    const auth = createRpcClient(AuthService, { baseUrl: `http://127.0.0.1:${env.AUTH_RPC_PORT}`, ...rpc });
    const member = await organisations.verifyMemberCredentials({
      email: "demo@example.com",
      password: demo.member.password,
      remoteAddress: "127.0.0.1",
    });
    expect(member.member?.organisationId).toBe(demo.organisation.id);
    const { client } = await auth.getClient({ clientId: demo.client.client_id });
    expect(client?.redirectUris).toEqual(["http://127.0.0.1:9876/callback"]);
    await stop();

    env.PUBLIC_URL = `http://127.0.0.1:${env.GATEWAY_PORT}/`;
    const again = await start();
    expect(again).not.toContain("demo data (");
    // The issuer the banner prints is the one the metadata document names.
    const metadata = (await (
      await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/.well-known/oauth-authorization-server`)
    ).json()) as { issuer: string };
    expect(metadata.issuer).toBe(`http://127.0.0.1:${env.GATEWAY_PORT}`);
    expect(again).toContain(`  issuer (PUBLIC_URL): ${metadata.issuer}\n`);
    // While the demo member keeps the demo password, every start's banner shows the sign-in.
    expect(again).toContain(`  demo sign-in: demo@example.com / ${demo.member.password} (Demo Organisation)\n`);
    expect(again).toContain(`  demo credentials: ${file}\n`);
    await stop();
  }, 240_000);
});
