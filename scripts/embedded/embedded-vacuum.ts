// Autovacuum's work for the embedded default: PGlite runs PostgreSQL as its one backend, with no
// autovacuum launcher (`show autovacuum` says on, yet nothing is vacuumed), while the outbox and the
// deliveries update every row they hold and prune what is done: dead versions would pile up and
// transaction ids age towards wraparound. Every VACUUM_EVERY_MS, a connection to the served session
// (pglite-server.ts; between other connections' transactions, as VACUUM must run) vacuums or analyses
// each table autovacuum would pick, catalogs included, a statement each, so no service waits for long.
import pg from "pg";
import type { Logger } from "../../services/shared/logger.js";
import { PollLoop } from "../../services/shared/loop/poll-loop.js";

/** How often the tables are checked (autovacuum_naptime's default). */
export const VACUUM_EVERY_MS = 60_000;

/** A table's own autovacuum setting `name` (its reloptions), else `fallback`: PostgreSQL's default. */
const setting = (name: string, fallback: number) =>
  `coalesce((select o.option_value::float8 from pg_options_to_table(c.reloptions) o where o.option_name = '${name}'), ${fallback})`;

/**
 * The tables due by autovacuum's rules (PostgreSQL documentation, "The Autovacuum Daemon"), with its
 * default thresholds or the table's own settings, and a vacuum once its oldest transaction id is older
 * than autovacuum_freeze_max_age (200 million). Plain tables and materialized views, in every schema
 * but TOAST's (a table's TOAST table is vacuumed with it).
 */
const DUE_SQL = `select format('%I.%I', t."schema", t."name") as "table", t."vacuum", t."analyze" from (
    select s.schemaname as "schema", s.relname as "name", s.n_dead_tup,
      (s.n_dead_tup > ${setting("autovacuum_vacuum_threshold", 50)} + ${setting("autovacuum_vacuum_scale_factor", 0.2)} * greatest(c.reltuples, 0)
        or s.n_ins_since_vacuum > ${setting("autovacuum_vacuum_insert_threshold", 1000)} + ${setting("autovacuum_vacuum_insert_scale_factor", 0.2)} * greatest(c.reltuples, 0)
        or age(c.relfrozenxid) > 200000000) as "vacuum",
      (s.n_mod_since_analyze > ${setting("autovacuum_analyze_threshold", 50)} + ${setting("autovacuum_analyze_scale_factor", 0.1)} * greatest(c.reltuples, 0)) as "analyze"
      from pg_stat_all_tables s join pg_class c on c.oid = s.relid
     where c.relkind in ('r', 'm') and s.schemaname <> 'pg_toast'
  ) t
 where t."vacuum" or t."analyze"
 order by t.n_dead_tup desc`;

export interface EmbeddedVacuum {
  /** A check (joining one already running), and the statements it ran. */
  pass(): Promise<string[]>;
  /** Stops the timer; a check waiting for the session is let go (its connection closed), one running ends first. */
  stop(): Promise<void>;
}

/**
 * Vacuums and analyses the served database at `url` as autovacuum would,
 * every `everyMs`; `logger`: what each timed check ran (debug), why one failed or
 * a table could not be vacuumed (warn).
 */
export function startEmbeddedVacuum(url: string, logger?: Logger, everyMs = VACUUM_EVERY_MS): EmbeddedVacuum {
  let running: Promise<string[]> | undefined;
  let client: pg.Client | undefined;
  let stopped = false;
  const check = async (): Promise<string[]> => {
    const c = new pg.Client({ connectionString: url });
    client = c;
    // A connection the server drops (the database closing) fails the query in hand; without a
    // listener pg would also throw the error at the process.
    c.on("error", (err) => logger?.warn({ err }, "embedded database vacuum: connection lost"));
    // pg leaves connect() unsettled when the client is ended while it waits (stop(), below).
    const ended = new Promise<never>((_, reject) =>
      c.once("end", () => reject(new Error("embedded database vacuum: connection closed"))),
    );
    ended.catch(() => undefined);
    try {
      await Promise.race([c.connect(), ended]);
      // The one backend's counts so far, flushed to the statistics the check reads (they are
      // otherwise flushed at most once a second, when it goes idle).
      await c.query("select pg_stat_force_next_flush()");
      const { rows } = await c.query<{ table: string; vacuum: boolean; analyze: boolean }>(DUE_SQL);
      const ran: string[] = [];
      for (const { table, vacuum, analyze } of rows) {
        if (stopped) break;
        const sql = vacuum ? `vacuum${analyze ? " (analyze)" : ""} ${table}` : `analyze ${table}`;
        try {
          await c.query(sql);
          ran.push(sql);
        } catch (err) {
          // A table dropped since the check, say: the others are still vacuumed.
          if (stopped) break;
          logger?.warn({ err, statement: sql }, "embedded database vacuum: a table failed");
        }
      }
      return ran;
    } finally {
      client = undefined;
      await c.end().catch(() => undefined);
    }
  };
  const pass = (): Promise<string[]> => {
    running ??= check().finally(() => (running = undefined));
    return running;
  };
  // The loop of every background timer (as the pruning's, prune-loop.ts): the first check one
  // interval after the start, not during it; a failed check is tried again an interval later.
  let rounds = 0;
  const loop = new PollLoop({
    round: async () => {
      const ran = rounds++ > 0 ? await pass() : [];
      if (ran.length > 0) logger?.debug({ statements: ran }, "embedded database vacuumed");
      return everyMs;
    },
    backoff: { baseMs: everyMs, maxMs: everyMs },
    onError: (err, retryInMs) => logger?.warn({ err, retryInMs }, "embedded database vacuum failed; retrying"),
  });
  loop.start();
  return {
    pass,
    stop: async () => {
      stopped = true;
      // Waiting for the session behind another connection's transaction, the check would hold up
      // the close that ends that transaction: its connection goes, and its statement with it.
      await client?.end().catch(() => undefined);
      await loop.stop();
      await running?.catch(() => undefined);
    },
  };
}
