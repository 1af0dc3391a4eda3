// Where a process's CPU time went, from the .cpuprofile files that
// `node --cpu-prof` writes (BENCH_CPU_PROF=<dir> in the delivery benches):
// per file, the busy share (time not idle), then the top functions by self
// time, by package (node_modules/<package>, node: internals, the project's
// own top folder) and by file; the callers of the top native functions
// (writeBuffer, the garbage collector: who pays for them); and busy share per
// 5 s of the run (the measured window stands out from start-up and drain).
// Run: npx tsx bench/cpu-profile-top.ts <file.cpuprofile | dir> [top n]
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface Profile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const target = process.argv[2];
const top = Number(process.argv[3] ?? 20);
if (!target) {
  console.error("usage: npx tsx bench/cpu-profile-top.ts <file.cpuprofile | dir> [top n]");
  process.exit(2);
}

/** The package a script belongs to: node_modules/<name> (scoped too), node's own, or the project's top folder. */
function packageOf(url: string, functionName: string): string {
  if (url === "") return `(${functionName || "native"})`;
  if (url.startsWith("node:")) return "node:internal";
  const file = url.replace(/^file:\/\//, "");
  const nm = file.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const [first, second] = file.slice(nm + "/node_modules/".length).split("/");
    return first!.startsWith("@") ? `${first}/${second}` : first!;
  }
  const relative = path.relative(process.cwd(), file);
  return relative.startsWith("..")
    ? file
    : relative
        .split(path.sep)
        .slice(0, relative.includes(path.sep) ? 2 : 1)
        .join("/");
}

function fileOf(url: string): string {
  if (url === "") return "(native)";
  const file = url.replace(/^file:\/\//, "");
  const nm = file.lastIndexOf("/node_modules/");
  return nm >= 0 ? file.slice(nm + 1) : path.relative(process.cwd(), file) || file;
}

function table(title: string, totals: Map<string, number>, busy: number): void {
  console.log(`  ${title}`);
  for (const [key, us] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`    ${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / busy).toFixed(1).padStart(5)} %  ${key}`);
  }
}

async function summarise(file: string): Promise<void> {
  const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  const buckets: number[] = [];
  let at = profile.startTime;
  // timeDeltas[i] is the time from the previous sample to sample i: counted to the frame sampled.
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + us);
    at += us;
    const b = Math.floor((at - profile.startTime) / 5e6);
    if (frames.get(id)!.functionName !== "(idle)") buckets[b] = (buckets[b] ?? 0) + us;
  });
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const f = frames.get(id)!;
    total += us;
    if (f.functionName === "(idle)") {
      idle += us;
      continue;
    }
    const where = f.url === "" ? "" : ` ${fileOf(f.url)}:${f.lineNumber + 1}`;
    const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + us);
    add(byFunction, `${f.functionName || "(anonymous)"}${where}`);
    add(byPackage, packageOf(f.url, f.functionName));
    add(byFile, fileOf(f.url) === "(native)" ? `(${f.functionName || "native"})` : fileOf(f.url));
  }
  const busy = total - idle;
  const wall = (profile.endTime - profile.startTime) / 1000;
  console.log(
    `${path.basename(file)}: ${(wall / 1000).toFixed(1)} s profiled, busy ${(busy / 1000).toFixed(0)} ms (${((100 * busy) / (wall * 1000)).toFixed(0)} % of one core); shares below are of busy time`,
  );
  table(`top ${top} functions by self time`, byFunction, busy);
  table(`top ${top} packages / project folders by self time`, byPackage, busy);
  table(`top ${top} files by self time`, byFile, busy);
  // Who calls the costliest native frames: the nearest callers outside node's own code.
  const natives = [...byFunction]
    .filter(([k]) => !k.includes(" "))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 3);
  for (const [name] of natives) {
    const callers = new Map<string, number>();
    for (const [id, us] of self) {
      if ((frames.get(id)!.functionName || "(anonymous)") !== name || frames.get(id)!.url !== "") continue;
      let p = parent.get(id);
      const chain: string[] = [];
      while (p !== undefined && chain.length < 3) {
        const f = frames.get(p)!;
        if (f.url !== "" && !f.url.startsWith("node:"))
          chain.push(`${f.functionName || "(anonymous)"} ${fileOf(f.url)}:${f.lineNumber + 1}`);
        p = parent.get(p);
      }
      const key = chain.join(" < ") || "(no JavaScript caller)";
      callers.set(key, (callers.get(key) ?? 0) + us);
    }
    table(`callers of ${name}`, new Map([...callers].sort((a, b) => b[1] - a[1]).slice(0, 5)), busy);
  }
  console.log(`  busy % of one core per 5 s: ${buckets.map((us) => Math.round((us ?? 0) / 5e4)).join(" ")}`);
}

const files = (await stat(target)).isDirectory()
  ? (await readdir(target))
      .filter((f) => f.endsWith(".cpuprofile"))
      .sort()
      .map((f) => path.join(target, f))
  : [target];
for (const file of files) await summarise(file);
