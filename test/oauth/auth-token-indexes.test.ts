// The access tokens' grant and family indexes hold only rows that have a
// grant or a family (migration 2026-12-16): a client_credentials token, the
// kind issued most, has neither and is written to neither index. Every
// statement that finds tokens by one of them must still be served by its
// index: a family's revocation ("family" = $1, token-handlers.ts) and the
// grant's cascade, as PostgreSQL's foreign-key trigger runs it ($1 = "grant_id"),
// each planned generically, as a prepared statement is.
import type { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH_ENTITIES } from "../../services/auth/auth-app.js";
import { AUTH_SCHEMA } from "../../services/auth/auth-service.js";
import { authMigrations } from "../../services/auth/migrations/index.js";
import { explained, migratedSchema, type MigratedSchema } from "../support/query-plans.js";

let schema: MigratedSchema;
let orm: MikroORM;

/** How a prepared statement's generic plan reads the table: its scans (an index scan by its index's name), sequential scans priced out (the table is empty here). */
let statements = 0;
async function indexesOf(sql: string, type: string): Promise<(string | undefined)[]> {
  // A name of its own each time: a prepared statement outlives a rolled-back transaction.
  const name = `planned_${++statements}`;
  return orm.em.fork().transactional(async (em) => {
    await em.execute("set local enable_seqscan = off");
    await em.execute("set local plan_cache_mode = force_generic_plan");
    await em.execute(`prepare ${name} (${type}) as ${sql}`);
    const plan = explained(
      await em.execute(`explain (format json) execute ${name} ('00000000-0000-4000-8000-000000000001')`),
    );
    await em.execute(`deallocate ${name}`);
    return plan
      .filter((n) => n["Node Type"].includes("Scan") && n["Node Type"] !== "Bitmap Heap Scan")
      .map((n) => n["Index Name"] ?? n["Node Type"]);
  });
}

beforeAll(async () => {
  schema = await migratedSchema({ schema: AUTH_SCHEMA, entities: AUTH_ENTITIES, migrations: authMigrations });
  orm = schema.orm;
}, 120_000);

afterAll(async () => {
  await schema?.close();
});

describe("access tokens without a grant or a family stay out of those indexes", () => {
  it("both indexes are partial: only rows with a value", async () => {
    const rows = await orm.em
      .fork()
      .execute<{ indexname: string; indexdef: string }[]>(
        `select indexname, indexdef from pg_indexes where schemaname = 'auth' and indexname in ('access_token_grant_id_index', 'access_token_family_index') order by indexname`,
      );
    expect(rows.map((r) => [r.indexname, r.indexdef.replace(/.* WHERE /, "WHERE ")])).toEqual([
      ["access_token_family_index", "WHERE (family IS NOT NULL)"],
      ["access_token_grant_id_index", "WHERE (grant_id IS NOT NULL)"],
    ]);
  });

  it("a family's revocation reads the family index", async () => {
    expect(await indexesOf(`delete from "auth"."access_token" where "family" = $1 returning "hash"`, "uuid")).toEqual([
      "access_token_family_index",
    ]);
  });

  it("the grant's cascade, as the foreign key's trigger states it, reads the grant index", async () => {
    expect(
      await indexesOf(`delete from only "auth"."access_token" where $1 operator(pg_catalog.=) "grant_id"`, "uuid"),
    ).toEqual(["access_token_grant_id_index"]);
  });
});
