// Samples PostgreSQL's pg_stat_activity while a bench runs, to see where the
// platform's connections wait (lock waits such as the claim's or the outbox's
// advisory lock, client reads, I/O). Every `intervalMs` it reads the non-idle
// backends of one database; stop() returns how many samples saw each
// (state, wait_event_type:wait_event, query's first words with its quoted
// literals as ?, since the ORM inlines values), most frequent first.
import pg from "pg";
import { ADMIN_DATABASE_URL } from "./rpc-target.js";

export interface ActivitySampler {
  stop(): Promise<string>;
}

export async function startActivitySampler(database: string, intervalMs = 25): Promise<ActivitySampler> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  const counts = new Map<string, number>();
  let samples = 0;
  let backends = 0;
  let busiest = 0;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const { rows } = await client.query<{ state: string | null; wait: string | null; query: string }>(
        `select state, wait_event_type || ':' || wait_event as wait, left(regexp_replace(regexp_replace(query, '\\s+', ' ', 'g'), '''[^'']*''', '?', 'g'), 100) as query
           from pg_stat_activity
          where datname = $1 and pid <> pg_backend_pid() and state is distinct from 'idle'`,
        [database],
      );
      samples++;
      backends += rows.length;
      busiest = Math.max(busiest, rows.length);
      for (const r of rows) {
        const key = `${(r.state ?? "-").padEnd(19)} ${(r.wait ?? "(cpu)").padEnd(26)} ${r.query}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      await client.end();
      const lines = [
        `pg_stat_activity: ${samples} samples, ${(backends / Math.max(1, samples)).toFixed(2)} non-idle backends on average, at most ${busiest}`,
      ];
      lines.push(`${"count".padStart(6)}  ${"state".padEnd(19)} ${"wait".padEnd(26)} query`);
      for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25))
        lines.push(`${String(n).padStart(6)}  ${key}`);
      return lines.join("\n");
    },
  };
}
