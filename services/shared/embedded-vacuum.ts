// Autovacuum's work for the embedded default. PGlite runs PostgreSQL as its
// one backend, with no autovacuum launcher: `show autovacuum` says on, yet no
// table is ever vacuumed or analysed (measured: 20,000 rows updated five times
// left 99,895 dead row versions 75 s later, the table never analysed). The
// platform's queues (the outbox, the deliveries) update every row they hold
// and prune what is done, so without this their dead versions pile up in the
// heap and the indexes for as long as `npm start` runs, and transaction ids
// age towards wraparound.
//
// Every VACUUM_EVERY_MS, a connection to the served session (pglite-server.ts:
// a simple Query is one request, given the session only between other
// connections' transactions, as VACUUM must run outside one) picks the
// tables autovacuum would have picked with PostgreSQL's default thresholds
// and vacuums or analyses each in a statement of its own, so that no service
// waits for more than one table at a time. Per-table settings (the delivery
// table's, migration 2026-12-10-queue-autovacuum) are not read here: the
// defaults pick a small table sooner, and the embedded tables stay small.
//
//   PostgreSQL 15 documentation, 25.1.6 "The Autovacuum Daemon": "If the
//   number of tuples obsoleted since the last VACUUM exceeds the 'vacuum
//   threshold', the table is vacuumed. The vacuum threshold is defined as:
//   vacuum threshold = vacuum base threshold + vacuum scale factor * number of tuples"
//   [...] "The table is also vacuumed if the number of tuples inserted since
//   the last vacuum has exceeded the defined insert threshold" [...] "For
//   analyze, a similar condition is used: the threshold [...] is compared to
//   the total number of tuples inserted, updated, or deleted since the last ANALYZE."
import pg from "pg";
import type { Logger } from "./logger.js";

/** How often the tables are checked (autovacuum_naptime's default). */
export const VACUUM_EVERY_MS = 60_000;

/**
 * The tables due, each with what it needs, by autovacuum's defaults:
 * autovacuum_vacuum_threshold 50 + scale factor 0.2, the insert threshold
 * 1,000 + 0.2, autovacuum_analyze_threshold 50 + 0.1, and an aggressive
 * vacuum (freezing) once its oldest transaction id is older than
 * vacuum_freeze_table_age (150 million).
 */
const DUE_SQL = `select format('%I.%I', s.schemaname, s.relname) as "table",
    (s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
      or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0)
      or age(c.relfrozenxid) > 150000000) as "vacuum",
    (s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)) as "analyze"
  from pg_stat_user_tables s join pg_class c on c.oid = s.relid
 where s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)
    or s.n_ins_since_vacuum > 1000 + 0.2 * greatest(c.reltuples, 0)
    or age(c.relfrozenxid) > 150000000
    or s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
 order by s.n_dead_tup desc`;

export interface EmbeddedVacuum {
  /** One check, and the statements it ran (for tests and the log); the next check still comes on time. */
  pass(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * Vacuums and analyses the served database at `url` as autovacuum would,
 * every `everyMs`; `logger`: what each timed check ran (debug), and why one failed (warn).
 */
export function startEmbeddedVacuum(url: string, logger?: Logger, everyMs = VACUUM_EVERY_MS): EmbeddedVacuum {
  let running: Promise<string[]> | undefined;
  let stopped = false;
  const pass = (): Promise<string[]> => {
    running ??= (async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        // The one backend's counts so far, flushed to the statistics the check reads (they are
        // otherwise flushed at most once a second, when it goes idle).
        await client.query("select pg_stat_force_next_flush()");
        const { rows } = await client.query<{ table: string; vacuum: boolean; analyze: boolean }>(DUE_SQL);
        const ran: string[] = [];
        for (const { table, vacuum, analyze } of rows) {
          if (stopped) break;
          const sql = vacuum ? `vacuum${analyze ? " (analyze)" : ""} ${table}` : `analyze ${table}`;
          await client.query(sql);
          ran.push(sql);
        }
        return ran;
      } finally {
        await client.end().catch(() => undefined);
      }
    })().finally(() => (running = undefined));
    return running;
  };
  // A failed check (the database closing, a table dropped meanwhile) is tried again at the next.
  const timed = () =>
    pass().then(
      (ran) => {
        if (ran.length > 0) logger?.debug({ statements: ran }, "embedded database vacuumed");
      },
      (err: unknown) => {
        if (!stopped) logger?.warn({ err }, "embedded database vacuum failed; tried again at the next check");
      },
    );
  const timer = setInterval(() => void timed(), everyMs).unref();
  return {
    pass,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
