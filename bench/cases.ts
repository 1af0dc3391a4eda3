// The benchmark's cases (bench/run.ts): an HTTP case is autocannon with 10
// connections, an RPC case a closed loop of calls; each run is one round.
import autocannon from "autocannon";
import { closedLoop } from "./closed-loop.js";
import { cpuTimes, stolenPercent } from "./cpu-steal.js";

/**
 * Before an HTTP case's first round, a round not counted (as closedLoop's
 * first calls). One second was not enough: the token endpoint's first round
 * still made 3,000-4,000/s where the next made 4,000-5,200/s.
 */
const WARMUP_SECONDS = 3;

export interface Sample {
  rps: number;
  /** ms: p99 for the HTTP rows, the median for the RPC rows */
  latency: number;
  /** The HTTP rows: the share of the machine's time the hypervisor took during the round, percent (cpu-steal.ts). */
  stolenPercent?: number;
}

export interface Case {
  /** growth: an OAuth case on the platform with its tables grown (growth-rows.ts). */
  group: "http" | "rpc" | "oauth" | "growth";
  name: string;
  run: () => Promise<Sample>;
}

export function httpCase(
  name: string,
  c: { url: string; method?: "GET" | "POST"; headers?: Record<string, string>; body?: string; expectStatus: number },
  seconds: number,
  group: Case["group"] = "http",
): Case {
  const load = (duration: number) =>
    autocannon({ url: c.url, method: c.method ?? "GET", headers: c.headers, body: c.body, connections: 10, duration });
  let warm = false;
  return {
    group,
    name,
    run: async () => {
      // Before its first round, a round not counted (as closedLoop's first calls): every
      // server, the peer's as ours, is measured with its code compiled and its connections open.
      if (!warm) await load(WARMUP_SECONDS);
      warm = true;
      const before = await cpuTimes();
      const result = await load(seconds);
      const stolen = stolenPercent(before, await cpuTimes());
      const wrong = result.statusCodeStats
        ? Object.keys(result.statusCodeStats).filter((s) => Number(s) !== c.expectStatus)
        : [];
      if (wrong.length) throw new Error(`${name}: unexpected statuses ${wrong.join(", ")}`);
      return {
        rps: result.requests.average,
        latency: result.latency.p99,
        ...(stolen === undefined ? {} : { stolenPercent: stolen }),
      };
    },
  };
}

export function loopCase(name: string, call: () => Promise<unknown>, inFlight: number, seconds: number): Case {
  return {
    group: "rpc",
    name,
    run: async () => {
      const r = await closedLoop(call, inFlight, seconds);
      return { rps: r.perSecond, latency: r.medianMs };
    },
  };
}
