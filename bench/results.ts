// The results file of a benchmark run: bench/results/<time>-<group>.json
// (BENCH_RESULTS_DIR elsewhere), every row printed, with the run's settings
// and the machine's load (absolute numbers drift with it; compare ratios).
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

export async function writeResults(
  group: string,
  settings: Record<string, unknown>,
  results: Record<string, unknown>,
): Promise<string> {
  const dir = process.env.BENCH_RESULTS_DIR ?? "bench/results";
  await mkdir(dir, { recursive: true });
  const at = new Date();
  const file = path.join(dir, `${at.toISOString().replace(/[:.]/g, "-")}-${group}.json`);
  const record = {
    at: at.toISOString(),
    group,
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: os.loadavg(),
    settings,
    ...results,
  };
  await writeFile(file, `${JSON.stringify(record, null, 2)}\n`);
  return file;
}
