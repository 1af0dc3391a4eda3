// The backends the integration tests run on: the machine's PostgreSQL and
// NATS JetStream over real connections (a fresh database per test file, a
// unique stream and subject prefix per run), or, where neither is reachable,
// the embedded backends (PGlite, in-process bus). test/global-setup.ts
// decides once and says so.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { loadConfig, type Config } from "../../services/shared/config.js";
import { EMBEDDED_POOL_MAX, startEmbeddedPostgres } from "../../scripts/embedded/embedded-postgres.js";

export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const TEST_NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";

export function backendMode(): { postgres: boolean; nats: boolean } {
  return {
    postgres: process.env.BIZCARD_TEST_POSTGRES === "real",
    nats: process.env.BIZCARD_TEST_NATS === "real",
  };
}

export const uniqueName = (prefix: string) => `${prefix}${Date.now().toString(36)}${randomBytes(4).toString("hex")}`;

export interface TestDatabase {
  url: string;
  poolMax: number;
  drop(): Promise<void>;
}

/** A new database `name` on the PostgreSQL server of `adminUrl`; drop() removes it, sessions and all. */
export async function createDatabaseOn(
  adminUrl: string,
  name: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const run = async (sql: string) => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await run(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists "${name}" with (force)`) };
}

/**
 * A fresh, empty database: on the real PostgreSQL, else an embedded PGlite.
 * `sessions: "many"`: the test needs several sessions at once (locks, a
 * transaction held open while another commits), which single-session PGlite
 * cannot give; without the shared PostgreSQL it gets a private server started
 * from this machine's PostgreSQL binaries.
 */
export async function createTestDatabase(options: { sessions?: "one" | "many" } = {}): Promise<TestDatabase> {
  if (!backendMode().postgres && options.sessions === "many") {
    // Imported here: global setup imports this module, and processes.ts registers hooks.
    const { PostgresServer } = await import("./postgres-server.js");
    const server = await PostgresServer.start();
    return { url: server.url, poolMax: 5, drop: () => server.stop() };
  }
  if (!backendMode().postgres) {
    const dir = await mkdtemp(path.join(tmpdir(), "bizcard-pglite-"));
    try {
      const embedded = await startEmbeddedPostgres(dir, "test");
      return {
        url: embedded.url,
        poolMax: EMBEDDED_POOL_MAX,
        drop: async () => {
          try {
            await embedded.close();
          } finally {
            await rm(dir, { recursive: true, force: true });
          }
        },
      };
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }
  return { ...(await createDatabaseOn(ADMIN_DATABASE_URL, uniqueName("bizcard_test_"))), poolMax: 5 };
}

/** The tests' WEBHOOK_SECRET_ENCRYPTION_KEY unless a test sets its own: a fixed one, so that every service of a file opens what another sealed. */
export const TEST_SECRET_ENCRYPTION_KEY = Buffer.alloc(32, "test-webhook-secret-key").toString("base64");

/** A Config for tests: a unique stream and subject prefix, a random internal credential, NATS only when it is real. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const env: Record<string, string> = {
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    INTERNAL_RPC_TOKEN: randomBytes(32).toString("base64url"),
    WEBHOOK_SECRET_ENCRYPTION_KEY: TEST_SECRET_ENCRYPTION_KEY,
    NATS_STREAM: uniqueName("T_"),
    NATS_SUBJECT_PREFIX: uniqueName("t"),
    OUTBOX_POLL_MS: "100",
    ...(backendMode().nats ? { NATS_URL: TEST_NATS_URL } : {}),
    ...overrides,
  };
  return loadConfig(env);
}
