// Autovacuum's work on the embedded start (PGlite has no autovacuum launcher:
// embedded-vacuum.ts): a table with many dead row versions is vacuumed and
// analysed, a quiet one is left alone, and the check waits for another
// connection's open transaction rather than failing inside it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../services/shared/embedded-postgres.js";
import { startEmbeddedVacuum } from "../services/shared/embedded-vacuum.js";
import { createLogger } from "../services/shared/logger.js";
import { waitFor } from "./support/processes.js";

let dir: string;
let embedded: EmbeddedPostgres | undefined;
let client: pg.Client;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bizcard-vacuum-"));
  embedded = await startEmbeddedPostgres(dir, "vacuum");
  client = new pg.Client({ connectionString: embedded.url });
  await client.connect();
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

it("vacuums and analyses a queue-like table whose rows were all updated, and leaves a quiet table alone", async () => {
  await client.query(`create table "queue" ("id" int primary key, "state" text not null)`);
  await client.query(`insert into "queue" select i, 'pending' from generate_series(1, 2000) as i`);
  await client.query(`update "queue" set "state" = 'sent'`);
  await client.query(`update "queue" set "state" = 'done'`);
  await client.query(`create table "quiet" ("id" int primary key)`);
  await client.query(`insert into "quiet" values (1)`);
  // A first pass takes the new queue (inserted, updated, analysed never); one row inserted is below every threshold.
  expect(await embedded!.vacuum()).toEqual(["vacuum (analyze) public.queue"]);
  expect(await stats("quiet")).toMatchObject({ analysed: false, vacuumed: false });

  await client.query(`update "queue" set "state" = 'pending' where "id" <= 1500`);
  expect((await stats("queue")).dead).toBeGreaterThanOrEqual(1500);
  const ran = await embedded!.vacuum();
  expect(ran).toEqual(["vacuum (analyze) public.queue"]);
  expect(await stats("queue")).toMatchObject({ dead: 0, analysed: true, vacuumed: true, reltuples: 2000 });
});

it("waits for another connection's transaction to end instead of failing inside it (VACUUM runs outside a transaction)", async () => {
  await client.query(`create table "busy" ("id" int primary key)`);
  await client.query(`insert into "busy" select generate_series(1, 100)`);
  await client.query(`delete from "busy" where "id" > 10`);
  const other = new pg.Client({ connectionString: embedded!.url });
  await other.connect();
  try {
    await other.query("begin");
    await other.query(`insert into "busy" values (1000)`);
    let done = false;
    const pass = embedded!.vacuum().then((ran) => ((done = true), ran));
    await new Promise((r) => setTimeout(r, 300));
    expect(done).toBe(false);
    await other.query("commit");
    expect(await pass).toContain("vacuum (analyze) public.busy");
    expect((await other.query(`select count(*)::int as n from "busy"`)).rows[0].n).toBe(11);
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
  const vacuum = startEmbeddedVacuum(embedded!.url, createLogger("test", "debug", destination), 200);
  try {
    const line = await waitFor(async () => lines.find((l) => l.msg === "embedded database vacuumed"), 10_000, "a timed vacuum");
    expect(line.statements).toContain("vacuum (analyze) public.timed");
    expect(await stats("timed")).toMatchObject({ dead: 0, vacuumed: true, analysed: true });
  } finally {
    await vacuum.stop();
  }
});
