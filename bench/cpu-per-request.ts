// The platform's CPU per request on the OAuth rows, without the ratios: a
// measure to take before and after a change, since a machine's throughput
// moves by more than most changes do, and CPU time per request hardly moves
// with it. Starts the platform as `npm start` runs it
// (bench/oauth-target.ts), loads it with autocannon (10 connections), and
// prints per round the calls/s and the platform process's CPU (user and
// system, all its threads, from /proc) divided by the requests answered.
//
// Run: npx tsx bench/cpu-per-request.ts [rows] [seconds]
//   rows: a comma list of token, introspect and me, in order (default token,token,me,me)
//   BENCH_NODE_FLAGS="--trace-gc-nvp" BENCH_PLATFORM_OUTPUT=/tmp/gc.txt: with the GC trace;
//   the median bytes promoted of the last 30 young collections are printed at the end.
//   BENCH_CPU_PROF=<dir>: a CPU profile (bench/cpu-profile-inclusive.ts reads it).
import { readFile } from "node:fs/promises";
import autocannon from "autocannon";
import { startPlatform } from "./oauth-target.js";
import { TICK_US, processTicks } from "./run-cost.js";

const rows = (process.argv[2] ?? "token,token,me,me").split(",");
const seconds = Number(process.argv[3] ?? 4);
const unknown = rows.filter((r) => r !== "token" && r !== "introspect" && r !== "me");
if (unknown.length) throw new Error(`unknown rows ${unknown.join(", ")}: use token, introspect and me`);

const target = await startPlatform();
/** The platform process's CPU time so far, in clock ticks: [utime, stime]. */
const ticks = async () => (await processTicks(target.pid))!;
try {
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: target.clientId,
    client_secret: target.clientSecret,
    scope: "organisation:read",
  });
  for (const row of rows) {
    const formPost = (pathname: string, body: URLSearchParams) => ({
      url: `${target.gateway}${pathname}`,
      method: "POST" as const,
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: body.toString(),
    });
    const load =
      row === "token"
        ? formPost("/oauth/token", form)
        : row === "introspect"
          ? formPost(
              "/oauth/introspect",
              new URLSearchParams({
                client_id: target.clientId,
                client_secret: target.clientSecret,
                token: target.accessToken,
              }),
            )
          : { url: `${target.gateway}/oauth/me`, headers: { authorization: `Bearer ${target.accessToken}` } };
    const before = await ticks();
    const result = await autocannon({ ...load, connections: 10, duration: seconds });
    const after = await ticks();
    const [user, system] = [after[0] - before[0], after[1] - before[1]];
    const answered = result.requests.total;
    if (result.non2xx > 0) throw new Error(`${row}: ${result.non2xx} answers were not 2xx`);
    const us = (t: number) => Math.round((t * TICK_US) / answered);
    console.log(
      `${row.padEnd(6)} ${Math.round(result.requests.average).toLocaleString("en-US").padStart(7)}/s  ${us(user + system)} µs of the platform's CPU a request (${us(user)} user, ${us(system)} system)`,
    );
  }
} finally {
  await target.close();
}
const output = process.env.BENCH_PLATFORM_OUTPUT;
if (output && process.env.BENCH_NODE_FLAGS?.includes("--trace-gc-nvp")) {
  const promoted = (await readFile(output, "utf8"))
    .split("\n")
    .filter((l) => l.includes(" gc=s "))
    .slice(-30)
    .map((l) => Number(/ promoted=(\d+)/.exec(l)?.[1] ?? 0))
    .sort((a, b) => a - b);
  if (promoted.length)
    console.log(
      `young collections: median ${Math.round(promoted[promoted.length >> 1]! / 1024)} KB promoted of the last ${promoted.length}`,
    );
}
process.exit(0);
