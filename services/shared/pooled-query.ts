// The hot statements of the event pipeline (a contact and its event, the
// fan-out's rows, a worker's attempts), run on a connection of the service's
// pool without the ORM's per-query work: MikroORM formats every value into
// the SQL text, so PostgreSQL parses and plans each large statement afresh
// (about 1 ms of planning for the attempts' statement, as much as it takes to
// run). Here the values go as parameters, and on real PostgreSQL the
// statement is a named prepared one: parsed once per connection, its plan
// reused. PGlite (the embedded default) gets the same statement unnamed.
// The rows come back as the driver parses them, as em.execute returns them.
import type { MikroORM } from "@mikro-orm/postgresql";

interface Connection {
  query(q: { name?: string; text: string; values: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>;
}

/** `?` placeholders (MikroORM's) as `$1`, `$2`, …; a `?` in a quoted literal or identifier, or in a `--` comment, stays. */
export function positional(sql: string): string {
  let n = 0;
  let out = "";
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = sql.indexOf(c, i + 1);
      const to = end === -1 ? sql.length : end + 1;
      out += sql.slice(i, to);
      i = to - 1;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const to = end === -1 ? sql.length : end;
      out += sql.slice(i, to);
      i = to - 1;
    } else out += c === "?" ? `$${++n}` : c;
  }
  return out;
}

/**
 * Whether a service's database takes prepared statements and connections of
 * a side pool: real PostgreSQL, a pool of several connections. PGlite (the
 * embedded default) serves one session per service, a pool of one.
 */
export function onRealPostgres(deps: { databasePoolMax: number }): boolean {
  return deps.databasePoolMax > 1;
}

/** Each statement's text with positional placeholders, made once. */
const texts = new Map<string, string>();

export interface PooledStatement {
  <T = Record<string, unknown>>(values: unknown[]): Promise<T[]>;
}

/**
 * One statement (`?` placeholders) to run with values; `name` identifies it
 * as a prepared statement when `prepared` (real PostgreSQL: each name must
 * always have the same text).
 */
export function pooledStatement(orm: MikroORM, name: string, sql: string, prepared: boolean): PooledStatement {
  let text = texts.get(sql);
  if (text === undefined) texts.set(sql, (text = positional(sql)));
  const query = prepared ? { name, text } : { text };
  return async <T>(values: unknown[]) => {
    const knex = orm.em.getConnection().getKnex();
    const conn = (await knex.client.acquireConnection()) as Connection;
    try {
      return (await conn.query({ ...query, values })).rows as T[];
    } finally {
      await knex.client.releaseConnection(conn);
    }
  };
}
