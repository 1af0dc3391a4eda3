// One PGlite session shared by several connections (scripts/embedded/pglite-server.ts),
// as `npm start`'s services share their embedded database: each request and
// each transaction has the session to itself, over the real pg driver.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../scripts/embedded/embedded-postgres.js";
import { watchSessionQueue } from "../support/wait.js";

let root: string;
let db: EmbeddedPostgres;
const clients: pg.Client[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  clients.push(client);
  return client;
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "pglite-server-"));
  db = await startEmbeddedPostgres(root, "shared");
  const setup = await connect();
  await setup.query(`create table t (id int primary key, note text)`);
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await db?.close();
  await rm(root, { recursive: true, force: true });
});

it("answers each connection's parameterised queries with its own results, sent at the same time", async () => {
  const [a, b, c] = await Promise.all([connect(), connect(), connect()]);
  const asked = Array.from({ length: 150 }, (_, i) => i);
  const answers = await Promise.all(
    asked.flatMap((i) => [
      a.query<{ v: number }>(`select $1::int + 1000 as v`, [i]).then((r) => ["a", i, r.rows[0]!.v] as const),
      b.query<{ v: string }>(`select $1::text || '-b' as v`, [`${i}`]).then((r) => ["b", i, r.rows[0]!.v] as const),
      c
        .query<{ v: number }>(`select $1::int * 2 as v, $2::text as w`, [i, "x"])
        .then((r) => ["c", i, r.rows[0]!.v] as const),
    ]),
  );
  for (const [who, i, v] of answers) expect(v).toEqual(who === "a" ? i + 1000 : who === "b" ? `${i}-b` : i * 2);
});

it("gives a transaction the session until COMMIT: another connection waits, then sees only what was committed", async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  await a.query("begin");
  await a.query(`insert into t values (1, 'in a transaction')`);
  let seen: number | undefined;
  const queue = watchSessionQueue();
  const reading = b
    .query<{ n: number }>(`select count(*)::int as n from t where id = 1`)
    .then((r) => (seen = r.rows[0]!.n));
  // b's query has reached the session and waits there behind a's transaction, unanswered.
  await queue.held();
  expect(seen).toBeUndefined();
  await a.query(`update t set note = 'committed' where id = 1`);
  await a.query("commit");
  expect(await reading).toBe(1);
  expect((await b.query(`select note from t where id = 1`)).rows).toEqual([{ note: "committed" }]);
});

it("keeps a failed transaction's connection in charge until its ROLLBACK; both go on afterwards", async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  await a.query("begin");
  await a.query(`insert into t values (2, 'kept?')`);
  await expect(a.query(`insert into t values (2, 'duplicate')`)).rejects.toMatchObject({ code: "23505" });
  const reading = b.query<{ n: number }>(`select count(*)::int as n from t where id = 2`);
  await expect(a.query(`select 1`)).rejects.toMatchObject({ code: "25P02" });
  await a.query("rollback");
  expect((await reading).rows[0]!.n).toBe(0);
  expect((await a.query(`select count(*)::int as n from t`)).rows[0].n).toBe(1);
});

it("rolls back what a connection left open when it went away, and serves the others", async () => {
  const [a, b] = await Promise.all([connect(), connect()]);
  await a.query("begin");
  await a.query(`insert into t values (3, 'abandoned')`);
  const reading = b.query<{ n: number }>(`select count(*)::int as n from t where id = 3`);
  a.on("error", () => undefined); // its own "Connection terminated unexpectedly": the point of the test
  (a as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  expect((await reading).rows[0]!.n).toBe(0);
  expect((await b.query(`select count(*)::int as n from t`)).rows[0].n).toBe(1);
});
