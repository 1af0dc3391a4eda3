// The CPU time the hypervisor gave to others while this VM's vCPUs wanted it
// ("steal", the eighth figure of /proc/stat's `cpu` line), as a share of the
// machine's time between two readings. On the VM of 2026-11-29 17:42 it was
// 10-19 % during the token row's rounds (two-second samples) and about 1 %
// idle: part of why one round of a case differs from the next by a third,
// with nothing changed in the platform or the peer. A run's end line prints
// it (machine-probe.ts), and each delivery pass keeps it beside its cost
// (run-cost.ts). Undefined where /proc/stat is not there.
import { readFile } from "node:fs/promises";

/** The machine's CPU times so far, in clock ticks: all of them, and the stolen part. */
export interface CpuTimes {
  total: number;
  steal: number;
}

export async function cpuTimes(): Promise<CpuTimes | undefined> {
  try {
    const line = (await readFile("/proc/stat", "utf8")).split("\n", 1)[0]!;
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest time is inside user's).
    const [, ...fields] = line.trim().split(/\s+/);
    const ticks = fields.slice(0, 8).map(Number);
    if (ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) return undefined;
    return { total: ticks.reduce((a, b) => a + b, 0), steal: ticks[7]! };
  } catch {
    return undefined;
  }
}

/** The share of the machine's time stolen between two readings, percent; undefined without both. */
export function stolenPercent(before: CpuTimes | undefined, after: CpuTimes | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return ((after.steal - before.steal) / (after.total - before.total)) * 100;
}
