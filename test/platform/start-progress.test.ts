// A cold embedded `npm start` (a fresh DATA_DIR) says what it is doing, step by
// step, before "bizcard platform ready"; a warm one says it opens the databases.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { embeddedTemplate, templateMigrations } from "../../scripts/embedded/embedded-templates.js";
import { EMBEDDED_DATABASE, migrationNames } from "../../scripts/service-schemas.js";
import { httpReady, platformPorts, spawnProcess, type Spawned } from "../support/processes.js";

let dataDir: string;
let env: Record<string, string | undefined>;
let platform: Spawned | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-progress-"));
  env = {
    ...(await platformPorts()),
    DATA_DIR: dataDir,
    DATABASE_URL: undefined,
    NATS_URL: undefined,
    INTERNAL_RPC_TOKEN: undefined,
    LOG_LEVEL: "warn",
  };
});

afterAll(async () => {
  if (platform && platform.child.exitCode === null) process.kill(-platform.child.pid!, "SIGTERM");
  await platform?.exited;
  await rm(dataDir, { recursive: true, force: true });
});

async function startAndStop(): Promise<string[]> {
  platform = spawnProcess("npm", ["start", "--silent"], env);
  await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 150_000, platform);
  const out = platform.output();
  process.kill(-platform.child.pid!, "SIGTERM");
  expect(await platform.exited).toBe(0);
  expect(out).toContain("bizcard platform ready");
  return out
    .slice(0, out.indexOf("bizcard platform ready"))
    .split("\n")
    .filter((l) => l.startsWith("bizcard: "));
}

describe("npm start's progress before ready", () => {
  it("creating the database, migrating and starting each service, the demo, the gateway; then, warm, opening them", async () => {
    const services = ["delivery", "webhook", "auth", "organisation"].map(
      (name) => `bizcard: starting ${name}: migrating its schema`,
    );
    const after = ["bizcard: starting the background work (outbox relays, event consumers, delivery)"];
    // After npm ci, the migrated template its postinstall made (scripts/pglite-template.mjs); else one initdb.
    const migrated = JSON.stringify(templateMigrations(EMBEDDED_DATABASE)) === JSON.stringify(migrationNames());
    const how = migrated
      ? "the services' schemas made at install, copied"
      : embeddedTemplate()
        ? "the cluster made at install, copied"
        : "one initdb, copied";
    expect(await startAndStop()).toEqual([
      `bizcard: creating the database in ${dataDir} (first start: ${how})`,
      ...services,
      ...after,
      "bizcard: creating the demo organisation, member and client",
      "bizcard: starting the gateway",
    ]);
    expect(await startAndStop()).toEqual([
      `bizcard: opening the database in ${dataDir}`,
      ...services,
      ...after,
      "bizcard: starting the gateway",
    ]);
  }, 300_000);
});
