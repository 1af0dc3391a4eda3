// The embedded default's first start without initdb nor migrations: npm's
// postinstall (scripts/pglite-template.mjs) makes one initialised cluster and
// a copy of it for each service with its migrations applied, and a fresh
// data folder gets a copy of those; a template another PGlite, other settings
// or other migrations made is not used; production installs make none.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationNames, SERVICE_SCHEMAS } from "../scripts/service-schemas.js";
import { migrate, openDatabase } from "../services/shared/database.js";
import {
  embeddedTemplate,
  migratedTemplate,
  prepareEmbeddedPostgres,
  serviceTemplateMigrations,
  startEmbeddedDatabases,
  startEmbeddedPostgres,
} from "../services/shared/embedded-postgres.js";
import { createLogger } from "../services/shared/logger.js";
import { spawnProcess } from "./support/processes.js";

let root: string;
let template: string;
const before = process.env.BIZCARD_PGLITE_TEMPLATE_DIR;

async function runScript(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawnProcess(process.execPath, ["scripts/pglite-template.mjs"], env);
  const code = await child.exited;
  return { code, output: child.output() };
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "bizcard-template-"));
  template = path.join(root, "template");
  process.env.BIZCARD_PGLITE_TEMPLATE_DIR = template;
}, 60_000);

afterAll(async () => {
  if (before === undefined) delete process.env.BIZCARD_PGLITE_TEMPLATE_DIR;
  else process.env.BIZCARD_PGLITE_TEMPLATE_DIR = before;
  await rm(root, { recursive: true, force: true });
});

describe("the PGlite template", () => {
  it("is not made by a production install (npm ci --omit=dev)", async () => {
    const { code } = await runScript({ BIZCARD_PGLITE_TEMPLATE_DIR: template, npm_config_omit: "dev" });
    expect(code).toBe(0);
    expect(existsSync(template)).toBe(false);
    expect(embeddedTemplate()).toBeUndefined();
  });

  it("is made once by the postinstall script, with a marker naming its PGlite and initdb's settings", async () => {
    const made = await runScript({ BIZCARD_PGLITE_TEMPLATE_DIR: template });
    expect(made.code).toBe(0);
    expect(made.output).toContain(`bizcard: made the embedded PostgreSQL template in ${template}`);
    expect(made.output).toContain(`bizcard: made the services' migrated templates in ${template}-services (auth, organisation, webhook, delivery;`);
    const version = (JSON.parse(readFileSync("node_modules/@electric-sql/pglite/package.json", "utf8")) as { version: string }).version;
    expect(JSON.parse(readFileSync(path.join(template, "template.json"), "utf8"))).toEqual({ pglite: version, initdb: ["--set", "shared_buffers=16MB"] });
    expect(existsSync(path.join(template, "PG_VERSION"))).toBe(true);
    expect(embeddedTemplate()).toBe(template);
    // A second install finds it and makes nothing.
    const again = await runScript({ BIZCARD_PGLITE_TEMPLATE_DIR: template });
    expect(again.code).toBe(0);
    expect(again.output).not.toContain("made the embedded PostgreSQL template");
    expect(again.output).not.toContain("migrated templates");
  }, 120_000);

  it("is copied for each service of a fresh data folder, which then serve queries", async () => {
    const dataDir = path.join(root, "data");
    await prepareEmbeddedPostgres(dataDir, ["one", "two"]);
    for (const name of ["one", "two"]) {
      expect(existsSync(path.join(dataDir, "pglite", name, "PG_VERSION"))).toBe(true);
      expect(existsSync(path.join(dataDir, "pglite", name, "template.json"))).toBe(false);
    }
    const db = await startEmbeddedPostgres(dataDir, "two");
    const client = new pg.Client({ connectionString: db.url });
    try {
      await client.connect();
      await client.query(`create table t (id int primary key)`);
      await client.query(`insert into t values (1), (2)`);
      expect((await client.query(`select count(*)::int as n from t`)).rows[0].n).toBe(2);
      expect((await client.query(`show shared_buffers`)).rows[0].shared_buffers).toBe("16MB");
      // Only the database PGlite opens: template0 and template1 are dropped at install (fewer files to copy).
      expect((await client.query(`select datname from pg_database order by datname`)).rows.map((r) => r.datname)).toEqual(["postgres"]);
    } finally {
      await client.end();
      await db.close();
    }
  }, 120_000);

  it("starts every database of a fresh data folder at once (startEmbeddedDatabases), each its own", async () => {
    const dataDir = path.join(root, "data-all");
    const names = ["a", "b", "c"];
    const dbs = await startEmbeddedDatabases(dataDir, names);
    try {
      expect(dbs).toHaveLength(3);
      for (const [i, db] of dbs.entries()) {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        try {
          await client.query(`create table only_${names[i]} (id int)`);
          const tables = await client.query(`select tablename from pg_tables where tablename like 'only_%'`);
          expect(tables.rows.map((r) => r.tablename)).toEqual([`only_${names[i]}`]);
        } finally {
          await client.end();
        }
      }
    } finally {
      await Promise.all(dbs.map((db) => db.close()));
    }
  }, 120_000);

  it("has a migrated copy for each service, made by the same install", () => {
    const names = migrationNames();
    for (const name of Object.keys(SERVICE_SCHEMAS)) {
      expect(serviceTemplateMigrations(name)).toEqual(names[name]);
      expect(migratedTemplate(name, names[name]!)).toBe(path.join(`${template}-services`, name));
      expect(statSync(path.join(`${template}-services`, name, "PG_VERSION")).mode & 0o777).toBe(0o600);
    }
  });

  it("gives a fresh folder a service's schema with its migrations applied: the start's migrate finds none to apply", async () => {
    const dataDir = path.join(root, "data-migrated");
    const names = migrationNames();
    const [db] = await startEmbeddedDatabases(dataDir, ["auth"], { auth: names.auth! });
    const orm = await openDatabase({ clientUrl: db!.url, ...SERVICE_SCHEMAS.auth, entities: [], poolMax: 1, logger: createLogger("test", "silent") });
    try {
      expect(existsSync(path.join(dataDir, "pglite", "auth", "template.json"))).toBe(false);
      const applied: { name: string }[] = await orm.em.getConnection().execute(`select "name" from "auth"."mikro_orm_migrations" order by "id"`);
      expect(applied.map((r) => r.name)).toEqual(names.auth);
      expect(await migrate(orm)).toEqual([]);
      // Its tables serve as a migrated schema's do.
      await orm.em.getConnection().execute(`select count(*) from "auth"."access_token"`);
    } finally {
      await orm.close();
      await db!.close();
    }
  }, 120_000);

  it("uses a service's migrated copy only when its migrations begin the service's list", () => {
    const auth = migrationNames().auth!;
    // The code has migrations the template lacks: the start applies them.
    expect(migratedTemplate("auth", [...auth, "2099-01-01-later"])).toBe(path.join(`${template}-services`, "auth"));
    // Another checkout's migrations (one the code does not have, or fewer than the template applied): not used.
    expect(migratedTemplate("auth", ["2026-01-01-other", ...auth.slice(1)])).toBeUndefined();
    expect(migratedTemplate("auth", auth.slice(0, -1))).toBeUndefined();
    expect(migratedTemplate("nobody", auth)).toBeUndefined();
  });

  it("starts a service from the install's cluster when its migrated copy is not usable", async () => {
    const dataDir = path.join(root, "data-unmigrated");
    const [db] = await startEmbeddedDatabases(dataDir, ["auth"], { auth: ["2026-01-01-other"] });
    const client = new pg.Client({ connectionString: db!.url });
    try {
      await client.connect();
      expect((await client.query(`select count(*)::int as n from pg_namespace where nspname = 'auth'`)).rows[0].n).toBe(0);
    } finally {
      await client.end();
      await db!.close();
    }
  }, 120_000);

  it("is not used when another PGlite or other settings made it", async () => {
    const marker = path.join(template, "template.json");
    const original = readFileSync(marker, "utf8");
    try {
      writeFileSync(marker, JSON.stringify({ pglite: "0.0.1", initdb: ["--set", "shared_buffers=16MB"] }));
      expect(embeddedTemplate()).toBeUndefined();
      writeFileSync(marker, JSON.stringify({ ...JSON.parse(original), initdb: ["--set", "shared_buffers=128MB"] }));
      expect(embeddedTemplate()).toBeUndefined();
    } finally {
      writeFileSync(marker, original);
    }
    expect(embeddedTemplate()).toBe(template);
  });
});
