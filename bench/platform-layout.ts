// How the benchmark's delivery target (delivery-target.ts) runs the platform:
// the layout BENCH_LAYOUT names, the command line that starts it, and its
// processes by name.
import { mkdtemp, readFile } from "node:fs/promises";
import path from "node:path";
import { startArgs } from "../scripts/platform-processes.js";
import { ROOT, spawnProcess } from "../test/support/processes.js";

/**
 * BENCH_LAYOUT=distributed: the platform as `npm run start:distributed` runs
 * it, a process per service (through tsx); BENCH_LAYOUT=compiled: the same
 * processes compiled, as the containers run them (`npm run build` into a
 * folder inside the project, removed afterwards; start:distributed --compiled).
 */
export const LAYOUT = process.env.BENCH_LAYOUT;
export const DISTRIBUTED = LAYOUT === "distributed" || LAYOUT === "compiled";

/** The compiled build for BENCH_LAYOUT=compiled, inside the project so that it resolves node_modules (never dist/, which bin/bizcard.js would pick up). */
export async function compiledBuild(): Promise<string> {
  const out = await mkdtemp(path.join(ROOT, ".bench-build-"));
  const build = spawnProcess("npm", ["run", "--silent", "build", "--", "--outDir", out], {});
  const code = await build.exited;
  if (code !== 0) {
    process.stderr.write(build.output());
    throw new Error(`npm run build failed (${code})`);
  }
  return out;
}

/** Node's arguments for the platform in this layout; `nodeArgs` go before its script, `compiled` is compiledBuild()'s folder. */
export function platformArgs(nodeArgs: string[], compiled: string | undefined): string[] {
  const distributed = [
    ...nodeArgs,
    "--import",
    "tsx",
    "scripts/start-distributed.ts",
    ...(compiled ? ["--compiled", path.relative(ROOT, compiled)] : []),
  ];
  return DISTRIBUTED ? distributed : startArgs(nodeArgs);
}

/** A process's children by what they run (services/<name>/main, gateway/main). */
export async function childProcesses(pid: number): Promise<Record<string, number>> {
  const children = (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8"))
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  const named: Record<string, number> = {};
  for (const child of children) {
    const command = (await readFile(`/proc/${child}/cmdline`, "utf8")).split("\0").join(" ");
    const name = /(?:services\/(\w+)|(gateway))\/main/.exec(command);
    if (name) named[name[1] ?? name[2]!] = child;
  }
  return named;
}
