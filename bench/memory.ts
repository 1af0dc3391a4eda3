// The memory rows of the benchmark (issue 16): the peak resident memory of
// each platform process the other groups loaded (VmHWM in /proc/<pid>/status:
// the most it ever held, read before the process is stopped), and the
// embedded start (`npm start` on PGlite, no DATABASE_URL or NATS_URL): time
// from spawn to /readyz answering 200 and its peak memory, first on a fresh
// data folder (initdb runs), then started again on the same folder (a
// restart). Floors: every process at most 256 MB under the bench's load; the
// embedded start at most 400 MB at its peak and ready within 5 s.
import { readFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { httpReady, platformPorts, spawnProcess } from "../test/support/processes.js";
import { PLATFORM_ENV, startArgs } from "../scripts/platform-processes.js";

export const PROCESS_FLOOR_MB = 256;
export const EMBEDDED_FLOOR_MB = 400;
export const READY_FLOOR_MS = 5000;

/** A process's peak resident memory so far, MB (Linux); undefined where /proc does not say. */
export async function peakRssMb(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

export interface EmbeddedStart {
  /** Spawn to /readyz 200, ms. */
  readyMs: number;
  /** Peak resident memory once ready, MB. */
  peakMb: number | undefined;
}

/** `npm start` on its embedded default, twice on one data folder: a cold start, then a restart. */
export async function embeddedStarts(): Promise<{ cold: EmbeddedStart; restart: EmbeddedStart }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-bench-embedded-"));
  const once = async (): Promise<EmbeddedStart> => {
    const ports = await platformPorts();
    const started = performance.now();
    const platform = spawnProcess(process.execPath, startArgs(), {
      ...PLATFORM_ENV,
      ...ports,
      DATA_DIR: dataDir,
      DATABASE_URL: undefined,
      NATS_URL: undefined,
      LOG_LEVEL: "warn",
    });
    try {
      await httpReady(`http://127.0.0.1:${ports.GATEWAY_PORT}/readyz`, 120_000, platform);
      const readyMs = performance.now() - started;
      return { readyMs, peakMb: await peakRssMb(platform.child.pid) };
    } finally {
      await platform.kill();
    }
  };
  try {
    const cold = await once();
    const restart = await once();
    return { cold, restart };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
const mb = (n: number | undefined) => (n === undefined ? "–" : n.toFixed(0));

/** The peaks of running processes (name → pid), read now (before they stop). */
export async function peaksOf(loaded: Record<string, number | undefined>): Promise<Record<string, number | undefined>> {
  const running = Object.entries(loaded).filter(([, pid]) => pid !== undefined);
  return Object.fromEntries(
    await Promise.all(running.map(async ([name, pid]) => [name, await peakRssMb(pid)] as const)),
  );
}

/** Prints the memory rows: the loaded processes' peaks (name → MB, read with peaksOf) and the embedded starts; returns them for the results file. */
export async function memoryRows(peaks: Record<string, number | undefined>, withEmbedded: boolean) {
  const running = Object.keys(peaks);
  const embedded = withEmbedded ? await embeddedStarts() : undefined;
  console.log(`\n${"Memory (peak resident, VmHWM)".padEnd(72)} ${"MB".padStart(7)} ${"ready ms".padStart(9)}`);
  for (const [name, peak] of Object.entries(peaks))
    console.log(`${name.padEnd(72)} ${mb(peak).padStart(7)} ${"".padStart(9)}`);
  if (embedded) {
    console.log(
      `${"npm start, embedded (PGlite, in-process bus), fresh data folder".padEnd(72)} ${mb(embedded.cold.peakMb).padStart(7)} ${embedded.cold.readyMs.toFixed(0).padStart(9)}`,
    );
    console.log(
      `${"npm start, embedded, restarted on that folder".padEnd(72)} ${mb(embedded.restart.peakMb).padStart(7)} ${embedded.restart.readyMs.toFixed(0).padStart(9)}`,
    );
  }
  const loadedMax = Math.max(0, ...Object.values(peaks).map((p) => p ?? 0));
  const embeddedMax = embedded ? Math.max(embedded.cold.peakMb ?? 0, embedded.restart.peakMb ?? 0) : undefined;
  console.log(
    `\nfloors, memory: ` +
      (running.length > 0
        ? `every loaded process <= ${PROCESS_FLOOR_MB} MB (${mb(loadedMax)}: ${verdict(loadedMax <= PROCESS_FLOOR_MB)}); `
        : "") +
      (embedded
        ? `embedded start <= ${EMBEDDED_FLOOR_MB} MB (${mb(embeddedMax)}: ${verdict(embeddedMax! <= EMBEDDED_FLOOR_MB)}); ` +
          `cold start to ready <= ${READY_FLOOR_MS} ms (${embedded.cold.readyMs.toFixed(0)}: ${verdict(embedded.cold.readyMs <= READY_FLOOR_MS)})`
        : ""),
  );
  return { peaksMb: peaks, embedded };
}
