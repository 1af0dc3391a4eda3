// What one delivery pass cost, per event: the platform's CPU (its processes),
// PostgreSQL's (the backends connected to the platform's database) and the
// WAL it wrote. Beside a pass's p95 these are figures that hardly move
// between passes: the growth rows print them for both platforms, to tell a
// table that costs more per event from a p95 that moved with the machine
// (growth-rows.ts).
//
// CPU from /proc/<pid>/stat (utime + stime, in clock ticks of 10 ms);
// the WAL from pg_current_wal_lsn(), which is the whole server's: the other
// platform of the growth rows is idle meanwhile, its few writes counted too.
import { readFile } from "node:fs/promises";
import pg from "pg";
import { cpuTimes, stolenPercent } from "./cpu-steal.js";
import { ADMIN_DATABASE_URL } from "./rpc-target.js";

/** Per event of a pass. */
export interface RunCost {
  /** The platform's processes' CPU, µs. */
  platformUs: number;
  /** PostgreSQL's backends of the platform's database, µs. */
  postgresUs: number;
  /** WAL written, bytes. */
  walBytes: number;
  /** The share of the machine's time the hypervisor took during the pass, percent (cpu-steal.ts); not per event. */
  stolenPercent?: number;
}

/** Linux's USER_HZ: /proc's CPU times are in hundredths of a second. */
export const TICK_US = 10_000;

/** A process's CPU time so far, in clock ticks: [utime, stime] (/proc/<pid>/stat fields 14 and 15); undefined once it is gone. */
export async function processTicks(pid: number): Promise<readonly [number, number] | undefined> {
  try {
    // The fields after the command's closing parenthesis, which may itself hold spaces.
    const fields = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
    return [Number(fields[11]), Number(fields[12])];
  } catch {
    return undefined;
  }
}

async function ticksOf(pids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const t = await processTicks(pid);
    if (t !== undefined) out.set(pid, t[0] + t[1]);
  }
  return out;
}

/** CPU used between two readings, µs: a process that started in between counts from 0. */
const used = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].reduce((sum, [pid, t]) => sum + (t - (before.get(pid) ?? 0)), 0) * TICK_US;

/** Starts measuring; `stop(events)` answers the cost per event since. */
export async function startRunCost(
  database: string,
  platformPids: number[],
): Promise<{ stop(events: number): Promise<RunCost | undefined> }> {
  const client = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await client.connect();
  const reading = async () => {
    const { rows } = await client.query<{ pid: number; lsn: string }>(
      `select pid, pg_current_wal_lsn()::text as lsn from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
      [database],
    );
    const lsn =
      rows[0]?.lsn ?? (await client.query<{ lsn: string }>("select pg_current_wal_lsn()::text as lsn")).rows[0]!.lsn;
    return {
      lsn,
      platform: await ticksOf(platformPids),
      postgres: await ticksOf(rows.map((r) => r.pid)),
      machine: await cpuTimes(),
    };
  };
  const before = await reading();
  return {
    async stop(events) {
      try {
        const after = await reading();
        const { rows } = await client.query<{ bytes: number }>("select pg_wal_lsn_diff($1, $2)::float8 as bytes", [
          after.lsn,
          before.lsn,
        ]);
        if (events === 0) return undefined;
        return {
          platformUs: used(before.platform, after.platform) / events,
          postgresUs: used(before.postgres, after.postgres) / events,
          walBytes: rows[0]!.bytes / events,
          stolenPercent: stolenPercent(before.machine, after.machine),
        };
      } finally {
        await client.end();
      }
    },
  };
}
