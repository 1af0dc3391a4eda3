// Inclusive CPU time per function of a .cpuprofile (the time a function and
// everything it called were on the stack), over the last part of the run:
// where bench/cpu-profile-top.ts shows who burns the CPU, this shows on whose
// behalf (a hook, an interceptor, a route). A function on the stack twice in
// one sample counts once. Idle samples are left out; shares are of the busy time.
// Run: npx tsx bench/cpu-profile-inclusive.ts <file.cpuprofile> [last seconds] [top n] [filter]
//   last seconds: only the samples of the run's end (default 5: past start-up);
//   filter: only functions whose name or file contains it.
import { readFile } from "node:fs/promises";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const [file, lastArg, topArg, filter] = process.argv.slice(2);
if (!file) {
  console.error("usage: npx tsx bench/cpu-profile-inclusive.ts <file.cpuprofile> [last seconds] [top n] [filter]");
  process.exit(2);
}
const profile = JSON.parse(await readFile(file, "utf8")) as Profile;
const windowUs = Number(lastArg ?? 5) * 1e6;
const top = Number(topArg ?? 40);

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
const name = (n: Node) => {
  const f = n.callFrame;
  const where = f.url
    .replace(/^.*\/node_modules\/(\.cache\/bizcard-start\/[^/]+\/)?/, "")
    .replace(/^file:\/\/.*?\/(?=[^/]+\/[^/]+$)/, "");
  return `${f.functionName || "(anonymous)"} ${where}:${f.lineNumber + 1}`;
};

const inclusive = new Map<string, number>();
let busy = 0;
let t = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!;
  if (profile.endTime - t > windowUs) continue;
  let id: number | undefined = profile.samples[i]!;
  if (byId.get(id)!.callFrame.functionName === "(idle)") continue;
  // A sample stands for the time until the next one.
  const weight = profile.timeDeltas[i + 1] ?? 0;
  busy += weight;
  const seen = new Set<string>();
  for (; id !== undefined; id = parentOf.get(id)) {
    const key = name(byId.get(id)!);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + weight);
  }
}
console.log(`${file}: ${(busy / 1000).toFixed(0)} ms busy in the last ${windowUs / 1e6} s; inclusive shares of it`);
const rows = [...inclusive]
  .filter(([k]) => !filter || k.includes(filter))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top);
for (const [k, v] of rows) console.log(`${((100 * v) / busy).toFixed(1).padStart(6)} %  ${k}`);
