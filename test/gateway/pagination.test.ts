// The one keyset pagination (services/shared/pagination.ts) on real
// PostgreSQL: paging visits every row exactly once, in order, also when many
// rows share a timestamp; a token it did not issue is INVALID_ARGUMENT.
// ListContacts, ListSubscriptions and ListDeliveryAttempts all page with it.
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { int64IdKeyset, readPage, timeIdKeyset, type Keyset } from "../../services/shared/pagination.js";
import { createTestDatabase, type TestDatabase } from "../support/backends.js";

const RowEntity = defineEntity({
  name: "PagedRow",
  tableName: "paged_row",
  properties: {
    seq: p.bigint("bigint").primary(),
    id: p.uuid().unique(),
    at: p.datetime(3),
    list: p.text(),
  },
});
type Row = InferEntity<typeof RowEntity>;

const SeqEntity = defineEntity({
  name: "PagedSeq",
  tableName: "paged_seq",
  properties: { id: p.bigint("bigint").primary(), list: p.text() },
});
type Seq = InferEntity<typeof SeqEntity>;

let db: TestDatabase;
let orm: MikroORM;

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await MikroORM.init({
    clientUrl: db.url,
    entities: [RowEntity, SeqEntity],
    allowGlobalContext: false,
    pool: { min: 0, max: 2 },
  });
  const em = orm.em.fork();
  await em.execute(
    `create table paged_row (seq bigint primary key, id uuid not null unique, at timestamptz(3) not null, list text not null)`,
  );
  await em.execute(`create table paged_seq (id bigint primary key, list text not null)`);
});

afterAll(async () => {
  await orm?.close();
  await db?.drop();
});

async function pageThrough<R extends object>(
  keyset: Keyset<R>,
  find: Parameters<typeof readPage<R>>[2],
  pageSize: number,
): Promise<R[][]> {
  const pages: R[][] = [];
  let pageToken = "";
  do {
    const page = await readPage(keyset, { pageSize, pageToken }, find);
    pages.push(page.rows);
    pageToken = page.nextPageToken;
  } while (pageToken);
  return pages;
}

async function invalidArgument(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.InvalidArgument);
  return (err as ConnectError).rawMessage;
}

const token = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("keyset pagination on (time desc, id desc)", () => {
  const list = randomUUID();
  const find = (after: object, options: object) => orm.em.fork().find(RowEntity, { list, ...after }, options);
  const keyset = timeIdKeyset<Row>("at");
  let expected: string[];

  beforeAll(async () => {
    const em = orm.em.fork();
    const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    // Seven rows share one millisecond: only the id orders them.
    const times = [t(1), t(2), t(2), t(2), t(2), t(2), t(2), t(2), t(3)];
    const rows = times.map((at, i) => em.create(RowEntity, { seq: BigInt(i + 1), id: randomUUID(), at, list }));
    em.create(RowEntity, { seq: 100n, id: randomUUID(), at: t(2), list: "another list" });
    await em.flush();
    expected = rows.sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : -1)).map((r) => r.id);
  });

  it("visits every row once, in order, whatever the page size", async () => {
    for (const size of [1, 2, 3, 4, 9, 10]) {
      const pages = await pageThrough(keyset, find, size);
      expect(
        pages.flat().map((r) => r.id),
        `page size ${size}`,
      ).toEqual(expected);
      expect(pages.slice(0, -1).every((page) => page.length === size)).toBe(true);
      // No empty page at the end: the last page says there is no next one.
      expect(pages.at(-1)!.length).toBe(expected.length % size || size);
    }
  });

  it("answers INVALID_ARGUMENT for a token it did not issue, and for a bad page size", async () => {
    for (const bad of [
      "garbage",
      token([]),
      token(["2026-01-01T00:00:00.000Z"]),
      token(["not a time", randomUUID()]),
      token(["2026-01-01T00:00:00.000Z", "x"]),
      token([1, randomUUID()]),
    ]) {
      expect(await invalidArgument(readPage(keyset, { pageSize: 2, pageToken: bad }, find)), bad).toBe(
        "page_token: not a token this service issued",
      );
    }
    for (const size of [-1, 101, 1.5]) {
      expect(await invalidArgument(readPage(keyset, { pageSize: size, pageToken: "" }, find))).toBe(
        "page_size: expected 1 to 100",
      );
    }
    expect((await readPage(keyset, { pageSize: 0, pageToken: "" }, find)).rows.length).toBe(expected.length);
  });
});

describe("keyset pagination on (int64 id desc)", () => {
  const list = randomUUID();
  const find = (after: object, options: object) => orm.em.fork().find(SeqEntity, { list, ...after }, options);
  const keyset = int64IdKeyset<Seq>();
  const ids = [1n, 2n, 5n, 9n, 10n, 11n, 2n ** 62n];

  beforeAll(async () => {
    const em = orm.em.fork();
    for (const id of ids) em.create(SeqEntity, { id, list });
    em.create(SeqEntity, { id: 7n, list: "another list" });
    await em.flush();
  });

  it("visits every row once, newest first", async () => {
    for (const size of [1, 3, 7]) {
      const pages = await pageThrough(keyset, find, size);
      expect(pages.flat().map((r) => r.id)).toEqual([...ids].reverse());
    }
  });

  it("answers INVALID_ARGUMENT for a token it did not issue", async () => {
    for (const bad of [
      "garbage",
      token(["0"]),
      token([1]),
      token(["-1"]),
      token(["9223372036854775808"]),
      token(["01"]),
      token(["1", "2"]),
    ]) {
      expect(await invalidArgument(readPage(keyset, { pageSize: 2, pageToken: bad }, find)), bad).toBe(
        "page_token: not a token this service issued",
      );
    }
  });
});
