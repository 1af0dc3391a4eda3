// Autovacuum's work on the embedded start (PGlite has no autovacuum launcher:
// embedded-vacuum.ts): a table with many dead row versions is vacuumed and
// analysed, a quiet one is left alone, a table's own thresholds count, the
// check waits for another connection's open transaction rather than failing
// inside it, and stopping lets go of a check that waits.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../scripts/embedded/embedded-postgres.js";
import { startEmbeddedVacuum, type EmbeddedVacuum } from "../../scripts/embedded/embedded-vacuum.js";
import { createLogger } from "../../services/shared/logger.js";
import { waitFor } from "../support/processes.js";
import { watchSessionQueue } from "../support/wait.js";

/** Longer than any test: the tests call pass() themselves. */
const NO_TIMER_MS = 3_600_000;
let dir: string;
let embedded: EmbeddedPostgres | undefined;
let client: pg.Client;
let vacuum: EmbeddedVacuum | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bizcard-vacuum-"));
  // No vacuum of its own (the option is npm start's): each test starts the one it checks.
  embedded = await startEmbeddedPostgres(dir, "vacuum");
  client = new pg.Client({ connectionString: embedded.url });
  await client.connect();
});

afterEach(async () => {
  await vacuum?.stop();
  vacuum = undefined;
});

afterAll(async () => {
  await client?.end();
  await embedded?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const stats = async (table: string) => {
  await client.query("select pg_stat_force_next_flush()");
  return (
    await client.query<{ dead: number; analysed: boolean; vacuumed: boolean; reltuples: number }>(
      `select s.n_dead_tup::int as "dead", s.last_analyze is not null as "analysed", s.last_vacuum is not null as "vacuumed", c.reltuples::int as "reltuples"
         from pg_stat_user_tables s join pg_class c on c.oid = s.relid where s.relname = $1`,
      [table],
    )
  ).rows[0]!;
};

/** The statements of a pass that name the user's tables (a pass may also take system catalogs). */
const userTables = (ran: string[]) => ran.filter((sql) => sql.includes(" public."));

it("vacuums and analyses a queue-like table whose rows were all updated, and leaves a quiet table alone", async () => {
  vacuum = startEmbeddedVacuum(embedded!.url, undefined, NO_TIMER_MS);
  await client.query(`create table "queue" ("id" int primary key, "state" text not null)`);
  await client.query(`insert into "queue" select i, 'pending' from generate_series(1, 2000) as i`);
  await client.query(`update "queue" set "state" = 'sent'`);
  await client.query(`update "queue" set "state" = 'done'`);
  await client.query(`create table "quiet" ("id" int primary key)`);
  await client.query(`insert into "quiet" values (1)`);
  // The new queue (inserted, updated, never analysed) is due; one row inserted is below every threshold.
  expect(userTables(await vacuum.pass())).toEqual(["vacuum (analyze) public.queue"]);
  expect(await stats("quiet")).toMatchObject({ analysed: false, vacuumed: false });

  await client.query(`update "queue" set "state" = 'pending' where "id" <= 1500`);
  expect((await stats("queue")).dead).toBeGreaterThanOrEqual(1500);
  expect(userTables(await vacuum.pass())).toEqual(["vacuum (analyze) public.queue"]);
  expect(await stats("queue")).toMatchObject({ dead: 0, analysed: true, vacuumed: true, reltuples: 2000 });
});

it("reads a table's own autovacuum settings, and never takes a partitioned table's parent", async () => {
  vacuum = startEmbeddedVacuum(embedded!.url, undefined, NO_TIMER_MS);
  await client.query(`create table "tuned" ("id" int primary key) with (autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_scale_factor = 0,
    autovacuum_analyze_threshold = 5000, autovacuum_analyze_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000, autovacuum_vacuum_insert_scale_factor = 0)`);
  await client.query(`create table "parted" ("id" int not null) partition by range ("id")`);
  await client.query(`create table "parted_1" partition of "parted" for values from (0) to (100000)`);
  await client.query(`insert into "tuned" select generate_series(1, 3000)`);
  await client.query(`insert into "parted" select generate_series(1, 3000)`);
  const first = userTables(await vacuum.pass());
  // 3,000 inserts: past PostgreSQL's default thresholds, not past the table's own 5,000.
  expect(first).not.toContainEqual(expect.stringContaining("public.tuned"));
  expect(first).toContain("vacuum (analyze) public.parted_1");
  expect(first).not.toContainEqual(expect.stringMatching(/public\.parted$/));
  // 2,900 deleted: 5,900 changes since it was made are past its analyze threshold; 2,900 dead rows are not past its vacuum threshold.
  await client.query(`delete from "tuned" where "id" > 100`);
  expect(userTables(await vacuum.pass())).toContain("analyze public.tuned");
});

it("waits for another connection's transaction to end instead of failing inside it (VACUUM runs outside a transaction)", async () => {
  vacuum = startEmbeddedVacuum(embedded!.url, undefined, NO_TIMER_MS);
  await client.query(`create table "busy" ("id" int primary key)`);
  await client.query(`insert into "busy" select generate_series(1, 100)`);
  await client.query(`delete from "busy" where "id" > 10`);
  const other = new pg.Client({ connectionString: embedded!.url });
  await other.connect();
  try {
    await other.query("begin");
    await other.query(`insert into "busy" values (1000)`);
    let done = false;
    const queue = watchSessionQueue();
    const pass = vacuum.pass().then((ran) => ((done = true), ran));
    // The check's connection has reached the session and waits there behind the open transaction.
    await queue.held();
    expect(done).toBe(false);
    await other.query("commit");
    expect(await pass).toContain("vacuum (analyze) public.busy");
    expect((await other.query(`select count(*)::int as n from "busy"`)).rows[0].n).toBe(11);
  } finally {
    await other.end();
  }
});

it("stopping lets go of a check that waits behind a transaction, and leaves that transaction as it was", async () => {
  vacuum = startEmbeddedVacuum(embedded!.url, undefined, NO_TIMER_MS);
  await client.query(`create table "held" ("id" int primary key)`);
  const other = new pg.Client({ connectionString: embedded!.url });
  await other.connect();
  try {
    await other.query("begin");
    await other.query(`insert into "held" values (1)`);
    const queue = watchSessionQueue();
    const pass = vacuum.pass().catch((err: unknown) => err);
    // The check waits for the session behind the open transaction.
    await queue.held();
    const stopped = Date.now();
    await vacuum.stop();
    expect(Date.now() - stopped).toBeLessThan(5000);
    expect(await pass).toBeInstanceOf(Error);
    await other.query(`insert into "held" values (2)`);
    await other.query("commit");
    expect((await client.query(`select count(*)::int as n from "held"`)).rows[0].n).toBe(2);
  } finally {
    await other.end();
  }
});

it("runs on its own timer, and logs what it vacuumed at debug level", async () => {
  await client.query(`create table "timed" ("id" int primary key, "n" int not null)`);
  await client.query(`insert into "timed" select i, 0 from generate_series(1, 500) as i`);
  await client.query(`update "timed" set "n" = 1`);
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) };
  vacuum = startEmbeddedVacuum(embedded!.url, createLogger("test", "debug", destination), 200);
  const line = await waitFor(
    () => lines.find((l) => l.msg === "embedded database vacuumed" && String(l.statements).includes("public.timed")),
    10_000,
    "a timed vacuum",
  );
  expect(line.statements).toContain("vacuum (analyze) public.timed");
  expect(await stats("timed")).toMatchObject({ dead: 0, vacuumed: true, analysed: true });
  expect(lines.filter((l) => l.level === 40)).toEqual([]);
});
