// The embedded default's first start without initdb nor migrations: npm's
// postinstall (scripts/pglite-template.mjs) makes one initialised cluster and
// a copy of it with every service's schema migrated, and a fresh data folder
// gets a copy of that; a template another PGlite, other settings or other
// migrations made is not used; production installs make none.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMBEDDED_DATABASE, migrationNames, SERVICE_SCHEMAS } from "../../scripts/service-schemas.js";
import { migrate, openDatabase } from "../../services/shared/database.js";
import {
  prepareEmbeddedPostgres,
  startEmbeddedDatabases,
  startEmbeddedPostgres,
} from "../../scripts/embedded/embedded-postgres.js";
import { embeddedTemplate, migratedTemplate, templateMigrations } from "../../scripts/embedded/embedded-templates.js";
import { createLogger } from "../../services/shared/logger.js";
import { spawnProcess } from "../support/processes.js";

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
    expect(made.output).toContain(
      `bizcard: made the services' migrated database template in ${template}-migrated/platform (`,
    );
    const version = (
      JSON.parse(readFileSync("node_modules/@electric-sql/pglite/package.json", "utf8")) as { version: string }
    ).version;
    expect(JSON.parse(readFileSync(path.join(template, "template.json"), "utf8"))).toEqual({
      pglite: version,
      initdb: ["--set", "shared_buffers=8MB"],
    });
    expect(existsSync(path.join(template, "PG_VERSION"))).toBe(true);
    expect(embeddedTemplate()).toBe(template);
    // A second install finds it and makes nothing.
    const again = await runScript({ BIZCARD_PGLITE_TEMPLATE_DIR: template });
    expect(again.code).toBe(0);
    expect(again.output).not.toContain("made the embedded PostgreSQL template");
    expect(again.output).not.toContain("migrated database template");
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
      expect((await client.query(`show shared_buffers`)).rows[0].shared_buffers).toBe("8MB");
      // Only the database PGlite opens: template0 and template1 are dropped at install (fewer files to copy).
      expect(
        (await client.query(`select datname from pg_database order by datname`)).rows.map((r) => r.datname),
      ).toEqual(["postgres"]);
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

  it("has a migrated copy with every service's schema, made by the same install", () => {
    const names = migrationNames();
    expect(Object.keys(names)).toEqual(["auth", "organisation", "webhook", "delivery"]);
    expect(templateMigrations(EMBEDDED_DATABASE)).toEqual(names);
    expect(migratedTemplate(EMBEDDED_DATABASE, names)).toBe(path.join(`${template}-migrated`, EMBEDDED_DATABASE));
    expect(statSync(path.join(`${template}-migrated`, EMBEDDED_DATABASE, "PG_VERSION")).mode & 0o777).toBe(0o600);
  });

  it("gives a fresh folder every service's schema with its migrations applied: the start's migrate finds none to apply", async () => {
    const dataDir = path.join(root, "data-migrated");
    const names = migrationNames();
    const [db] = await startEmbeddedDatabases(dataDir, [EMBEDDED_DATABASE], { [EMBEDDED_DATABASE]: names });
    try {
      expect(existsSync(path.join(dataDir, "pglite", EMBEDDED_DATABASE, "template.json"))).toBe(false);
      for (const { schema, migrations } of Object.values(SERVICE_SCHEMAS)) {
        const orm = await openDatabase({
          clientUrl: db!.url,
          schema,
          migrations,
          entities: [],
          poolMax: 1,
          logger: createLogger("test", "silent"),
        });
        try {
          const applied: { name: string }[] = await orm.em
            .getConnection()
            .execute(`select "name" from "${schema}"."mikro_orm_migrations" order by "id"`);
          expect(applied.map((r) => r.name)).toEqual(names[schema]);
          expect(await migrate(orm)).toEqual([]);
          // Its tables are there, beside the migrations' own.
          const [tables]: { n: number }[] = await orm.em
            .getConnection()
            .execute(`select count(*)::int as n from pg_tables where schemaname = ?`, [schema]);
          expect(tables!.n).toBeGreaterThan(2);
        } finally {
          await orm.close();
        }
      }
    } finally {
      await db!.close();
    }
  }, 120_000);

  it("uses the migrated copy only when, for each schema, what it applied begins the code's migrations", () => {
    const names = migrationNames();
    const auth = names.auth!;
    // The code has migrations the template lacks: the start applies them.
    expect(migratedTemplate(EMBEDDED_DATABASE, { ...names, auth: [...auth, "2099-01-01-later"] })).toBe(
      path.join(`${template}-migrated`, EMBEDDED_DATABASE),
    );
    // Another checkout's migrations (one the code does not have, fewer than the template applied, a schema the code lacks): not used.
    expect(
      migratedTemplate(EMBEDDED_DATABASE, { ...names, auth: ["2026-01-01-other", ...auth.slice(1)] }),
    ).toBeUndefined();
    expect(migratedTemplate(EMBEDDED_DATABASE, { ...names, auth: auth.slice(0, -1) })).toBeUndefined();
    const { delivery: _, ...withoutDelivery } = names;
    expect(migratedTemplate(EMBEDDED_DATABASE, withoutDelivery)).toBeUndefined();
    expect(migratedTemplate("nobody", names)).toBeUndefined();
  });

  it("starts a database from the install's cluster when the migrated copy is not usable", async () => {
    const dataDir = path.join(root, "data-unmigrated");
    const [db] = await startEmbeddedDatabases(dataDir, [EMBEDDED_DATABASE], {
      [EMBEDDED_DATABASE]: { auth: ["2026-01-01-other"] },
    });
    const client = new pg.Client({ connectionString: db!.url });
    try {
      await client.connect();
      expect(
        (await client.query(`select count(*)::int as n from pg_namespace where nspname in ('auth', 'delivery')`))
          .rows[0].n,
      ).toBe(0);
    } finally {
      await client.end();
      await db!.close();
    }
  }, 120_000);

  it("is not used when another PGlite or other settings made it", async () => {
    const marker = path.join(template, "template.json");
    const original = readFileSync(marker, "utf8");
    try {
      writeFileSync(marker, JSON.stringify({ pglite: "0.0.1", initdb: ["--set", "shared_buffers=8MB"] }));
      expect(embeddedTemplate()).toBeUndefined();
      writeFileSync(marker, JSON.stringify({ ...JSON.parse(original), initdb: ["--set", "shared_buffers=16MB"] }));
      expect(embeddedTemplate()).toBeUndefined();
    } finally {
      writeFileSync(marker, original);
    }
    expect(embeddedTemplate()).toBe(template);
  });
});
