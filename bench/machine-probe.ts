// What kind of machine a run had, measured at its start, so that runs can be
// told apart before their ratios are read against the floors: machines of
// the same kind can run the platform's work at very different speeds, and no
// ratio cancels that out. The probes, each a few seconds at most:
// - jsLoopMs: a tight integer loop in this process (user-mode CPU speed);
// - pipeRoundTripUs: one byte to a child process and back over pipes, the
//   median of 2,000 (a wake-up of another process, as every socket write to
//   PostgreSQL, NATS or a client makes);
// - PostgreSQL: the median round trip of `select 1`, and of a statement that
//   commits a WAL record (a transactional logical message: one WAL flush, as
//   every durable token batch and event makes), 500 each. The token row's
//   statements wait on that flush, so its ratio to the peer follows the
//   flush's speed more than the JS loop's.
// A run probes at its start and again at its end: the machine's speed moved by
// up to 2x within half an hour on some days. The end's line also says how much
// of the machine's time the hypervisor took since the start probe (cpu-steal.ts).
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import pg from "pg";
import { cpuTimes, stolenPercent, type CpuTimes } from "./cpu-steal.js";
import { median } from "./stats.js";

export interface MachineProbe {
  loadAverageAtStart: number[];
  jsLoopMs: number;
  pipeRoundTripUs: number;
  /** PostgreSQL's `select 1` round trip, median (µs). */
  pgRoundTripUs: number;
  /** A statement that flushes WAL at its commit, median round trip (µs); NaN when the server refused it. */
  pgCommitUs: number;
  /** The machine's CPU times when the probe began (cpu-steal.ts); undefined without /proc/stat. */
  cpuTimes?: CpuTimes;
  /** A probe given the run's first one (the end's): the share of the machine's time stolen since it, percent. */
  stolenSinceStartPercent?: number;
}

function jsLoopMs(): number {
  const started = performance.now();
  let x = 0;
  for (let i = 0; i < 3e8; i++) x = (x * 31 + i) | 0;
  // Used, so that the loop is not optimised away.
  if (x === 0.5) console.log(x);
  return performance.now() - started;
}

async function pipeRoundTripUs(trips = 2_000): Promise<number> {
  const child = spawn(process.execPath, ["-e", "process.stdin.on('data', (b) => process.stdout.write(b))"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const times: number[] = [];
  await new Promise<void>((resolve, reject) => {
    let sent = 0;
    let at = 0;
    const send = () => {
      at = performance.now();
      child.stdin.write("x");
    };
    child.stdout.on("data", (chunk: Buffer) => {
      for (let n = 0; n < chunk.length; n++) times.push((performance.now() - at) * 1000);
      if (++sent < trips) send();
      else resolve();
    });
    child.once("error", reject);
    send();
  });
  child.kill();
  return median(times);
}

async function postgresRoundTrips(
  databaseUrl: string,
  trips = 500,
): Promise<{ pgRoundTripUs: number; pgCommitUs: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const time = async (text: string) => {
      const times: number[] = [];
      for (let i = 0; i < trips; i++) {
        const at = performance.now();
        await client.query(text);
        times.push((performance.now() - at) * 1000);
      }
      return median(times);
    };
    const pgRoundTripUs = await time("select 1");
    // Transactional: the message is WAL written in the statement's own transaction, flushed at its
    // commit. Where the server refuses it, the figure is left out (NaN).
    const pgCommitUs = await time("select pg_logical_emit_message(true, 'bizcard-bench-probe', '')").catch(
      () => Number.NaN,
    );
    return { pgRoundTripUs, pgCommitUs };
  } finally {
    await client.end();
  }
}

/**
 * The probes, printed on one line (`when`: "machine" at the start, "machine at
 * the end"); given the run's first probe (`start`), also the CPU time stolen since.
 */
export async function probeMachine(databaseUrl: string, when = "machine", start?: MachineProbe): Promise<MachineProbe> {
  const times = await cpuTimes();
  const stolen = start && stolenPercent(start.cpuTimes, times);
  const probe: MachineProbe = {
    ...(times === undefined ? {} : { cpuTimes: times }),
    loadAverageAtStart: loadavg(),
    jsLoopMs: jsLoopMs(),
    pipeRoundTripUs: await pipeRoundTripUs(),
    ...(await postgresRoundTrips(databaseUrl)),
    ...(stolen === undefined ? {} : { stolenSinceStartPercent: stolen }),
  };
  console.log(
    `${when}: load ${probe.loadAverageAtStart.map((l) => l.toFixed(2)).join(" ")}, JS loop ${probe.jsLoopMs.toFixed(0)} ms, ` +
      `pipe round trip to a child process ${probe.pipeRoundTripUs.toFixed(0)} µs, ` +
      `PostgreSQL select 1 ${probe.pgRoundTripUs.toFixed(0)} µs, commit with a WAL flush ${Number.isNaN(probe.pgCommitUs) ? "n/a (refused)" : `${probe.pgCommitUs.toFixed(0)} µs`} (medians)` +
      (stolen === undefined
        ? ""
        : `; CPU time stolen by the hypervisor since the start ${stolen.toFixed(1)} % of the machine's`),
  );
  return probe;
}
