// npm start's embedded databases (scripts/embedded-databases.ts): one PGlite
// instance the four services share on a fresh data folder, and a folder made
// before that keeps its database per service.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startPlatformDatabases } from "../../scripts/embedded-databases.js";
import { startEmbeddedDatabases } from "../../scripts/embedded/embedded-postgres.js";

const SERVICES = ["delivery", "webhook", "auth", "organisation"] as const;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "embedded-databases-"));
});
afterAll(() => rm(root, { recursive: true, force: true }));

async function schemas(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `select nspname from pg_namespace where nspname = any($1) order by nspname`,
      [[...SERVICES]],
    );
    return rows.map((r) => r.nspname);
  } finally {
    await client.end();
  }
}

it("gives a fresh data folder one database for every service, each schema there; opened again on restart", async () => {
  const dataDir = path.join(root, "fresh");
  const steps: string[] = [];
  const first = await startPlatformDatabases(dataDir, SERVICES, (s) => steps.push(s));
  try {
    expect(new Set(Object.values(first.urls)).size).toBe(1);
    expect(Object.keys(first.urls).sort()).toEqual([...SERVICES].sort());
    expect(first.databases).toHaveLength(1);
    expect(existsSync(path.join(dataDir, "pglite", "platform", "PG_VERSION"))).toBe(true);
    for (const svc of SERVICES) expect(existsSync(path.join(dataDir, "pglite", svc))).toBe(false);
    expect(steps[0]).toMatch(new RegExp(`^creating the database in ${dataDir} \\(first start: `));
    // The install's migrated template (npm ci's postinstall) holds every schema.
    expect(await schemas(first.urls.auth!)).toEqual(["auth", "delivery", "organisation", "webhook"]);
  } finally {
    for (const db of first.databases) await db.close();
  }
  const again = await startPlatformDatabases(dataDir, SERVICES, (s) => steps.push(s));
  for (const db of again.databases) await db.close();
  expect(steps[1]).toBe(`opening the database in ${dataDir}`);
}, 120_000);

it("keeps the database per service of a data folder made before the services shared one", async () => {
  const dataDir = path.join(root, "before");
  for (const db of await startEmbeddedDatabases(dataDir, SERVICES)) await db.close();
  const steps: string[] = [];
  const opened = await startPlatformDatabases(dataDir, SERVICES, (s) => steps.push(s));
  try {
    expect(steps).toEqual([`opening the databases (one per service) in ${dataDir}`]);
    expect(new Set(Object.values(opened.urls)).size).toBe(4);
    expect(opened.databases).toHaveLength(4);
    expect(existsSync(path.join(dataDir, "pglite", "platform"))).toBe(false);
  } finally {
    for (const db of opened.databases) await db.close();
  }
}, 120_000);
