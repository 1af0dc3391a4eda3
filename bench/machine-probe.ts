// What kind of machine a run had, measured at its start, so that runs can be
// told apart before their ratios are read against the floors: one day's
// machine of the same kind ran the platform's work 1.5-2.5x slower than
// another's (bench/profile-findings.md, 2026-11-28 evening), and no ratio
// cancels that out. Two probes, each a few seconds at most:
// - jsLoopMs: a tight integer loop in this process (user-mode CPU speed);
// - pipeRoundTripUs: one byte to a child process and back over pipes, the
//   median of 2,000 (a wake-up of another process, as every socket write to
//   PostgreSQL, NATS or a client makes).
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { median } from "./stats.js";

export interface MachineProbe {
  loadAverageAtStart: number[];
  jsLoopMs: number;
  pipeRoundTripUs: number;
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
  const child = spawn(process.execPath, ["-e", "process.stdin.on('data', (b) => process.stdout.write(b))"], { stdio: ["pipe", "pipe", "inherit"] });
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

/** Both probes, printed on one line. */
export async function probeMachine(): Promise<MachineProbe> {
  const probe = { loadAverageAtStart: loadavg(), jsLoopMs: jsLoopMs(), pipeRoundTripUs: await pipeRoundTripUs() };
  console.log(
    `machine: load ${probe.loadAverageAtStart.map((l) => l.toFixed(2)).join(" ")}, JS loop ${probe.jsLoopMs.toFixed(0)} ms, ` +
      `pipe round trip to a child process ${probe.pipeRoundTripUs.toFixed(0)} µs (median)`,
  );
  return probe;
}
