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

/** A simple query of several statements answers with one result each (node-postgres). */
interface ScriptConnection {
  query(text: string): Promise<{ rows: Record<string, unknown>[] } | { rows: Record<string, unknown>[] }[]>;
}

/** Each `?` placeholder (MikroORM's) replaced by `each(n)`, n from 1; a `?` in a quoted literal or identifier, or in a `--` comment, stays. */
function placeholders(sql: string, each: (n: number) => string): string {
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
    } else out += c === "?" ? each(++n) : c;
  }
  return out;
}

/** `?` placeholders (MikroORM's) as `$1`, `$2`, … */
export const positional = (sql: string): string => placeholders(sql, (n) => `$${n}`);

/** A value as an SQL literal: null, a finite number, a bigint, or a string (quoted, its quotes doubled: standard_conforming_strings). */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`not an SQL number: ${value}`);
    return String(value);
  }
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  throw new TypeError(`no SQL literal for a ${typeof value}`);
}

/** A name (a schema, a table) as an SQL identifier: double-quoted, its double quotes doubled. */
export const identifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** `?` placeholders replaced by the values as literals (literal()), for a script sent as one simple query (pooledScript). */
export function inlined(sql: string, values: unknown[]): string {
  const text = placeholders(sql, (n) => {
    if (n > values.length) throw new RangeError(`no value for placeholder ${n}`);
    return literal(values[n - 1]);
  });
  return text;
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
const positionalOnce = (sql: string): string => {
  let text = texts.get(sql);
  if (text === undefined) texts.set(sql, (text = positional(sql)));
  return text;
};

/** `fn` on a connection of the service's pool, without the ORM's per-query work; the connection goes back after. */
async function onPooledConnection<C, T>(orm: MikroORM, fn: (conn: C) => Promise<T>): Promise<T> {
  const knex = orm.em.getConnection().getKnex();
  const conn = (await knex.client.acquireConnection()) as C;
  try {
    return await fn(conn);
  } finally {
    await knex.client.releaseConnection(conn);
  }
}

/** A simple query's results, one per statement (node-postgres answers one result for one statement). */
const perStatement = (results: Awaited<ReturnType<ScriptConnection["query"]>>) => (Array.isArray(results) ? results : [results]).map((r) => r.rows);

export interface PooledStatement {
  <T = Record<string, unknown>>(values: unknown[]): Promise<T[]>;
}

/**
 * One statement (`?` placeholders) to run with values; `name` identifies it
 * as a prepared statement when `prepared` (real PostgreSQL: each name must
 * always have the same text).
 */
export function pooledStatement(orm: MikroORM, name: string, sql: string, prepared: boolean): PooledStatement {
  const text = positionalOnce(sql);
  const statementName = prepared ? name : undefined;
  return async <T>(values: unknown[]) =>
    onPooledConnection(orm, async (conn: Connection) =>
      // A literal, not a spread of a shared object: V8 gave each spread copy
      // a hidden class of its own (--log-maps: a new map per statement).
      (await conn.query(statementName === undefined ? { text, values } : { name: statementName, text, values })).rows as T[],
    );
}

/**
 * Statements separated by semicolons, sent as ONE simple query: one round
 * trip where a transaction of several statements would take one per
 * statement and two more (BEGIN, COMMIT). PostgreSQL runs them as one
 * transaction (an implicit block: committed after the last one, rolled back
 * whole when one fails, so the connection goes back to the pool clean), each
 * statement with a snapshot of its own (READ COMMITTED): a statement sees
 * what committed while an earlier one waited for a lock. No parameters (the
 * simple protocol has none): the values are inlined (inlined()), and the
 * statements are planned each time. Returns each statement's rows.
 */
export async function pooledScript(orm: MikroORM, statements: string): Promise<Record<string, unknown>[][]> {
  return onPooledConnection(orm, async (conn: ScriptConnection) => perStatement(await conn.query(statements)));
}

/** The connections that have prepared a statement of pooledPreparedScript, by its name. */
const preparedOn = new Map<string, WeakSet<object>>();

/**
 * pooledScript() whose last statement is a prepared one: `before` (statements
 * without parameters, each ending with a semicolon), then EXECUTE of `sql`
 * (`?` placeholders) with the values as literals, in ONE simple query as
 * pooledScript sends it (one round trip, one implicit transaction, a snapshot
 * per statement). The statement is PREPAREd once per connection (SQL's
 * PREPARE: its parameters' types inferred as for a parsed statement), so that
 * PostgreSQL need not plan it afresh at every call (the workers' claim: about
 * 0.5 ms of PostgreSQL's CPU to plan, 0.1 ms to run; bench/profile-findings.md,
 * 2026-11-29 13:20). Real PostgreSQL only: PGlite serves one session per
 * service, as for pooledStatement.
 */
export async function pooledPreparedScript(orm: MikroORM, before: string, name: string, sql: string, values: unknown[]): Promise<Record<string, unknown>[][]> {
  let prepared = preparedOn.get(name);
  if (prepared === undefined) preparedOn.set(name, (prepared = new WeakSet()));
  const made = prepared;
  const text = positionalOnce(sql);
  return onPooledConnection(orm, async (conn: ScriptConnection & object) => {
    if (!made.has(conn)) {
      // Once per connection, on its own: a prepared statement outlives the transaction that made it.
      await conn.query(`prepare ${identifier(name)} as ${text}`).catch((err: { code?: string }) => {
        if (err.code !== "42P05") throw err; // duplicate_prepared_statement: made before, by this connection
      });
      made.add(conn);
    }
    return perStatement(await conn.query(`${before}\nexecute ${identifier(name)}(${values.map(literal).join(", ")})`));
  });
}
