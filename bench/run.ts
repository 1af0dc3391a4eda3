// npm run bench: the gateway's own cost, as ratios against a bare node:http
// server measured in the same run (absolute numbers drift between machines).
// Each server is its own process; autocannon runs here, on the same two
// cores. 10 connections; the cases take turns for BENCH_ROUNDS rounds of
// BENCH_SECONDS each, and the median round counts (one run is noisy here).
import autocannon from "autocannon";
import { freePort, httpReady, spawnProcess, spawnTs } from "../test/support/processes.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Case {
  name: string;
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  expectStatus: number;
}

async function measure(c: Case) {
  const result = await autocannon({
    url: c.url,
    method: c.method ?? "GET",
    headers: c.headers,
    body: c.body,
    connections: 10,
    duration: seconds,
  });
  const wrong = result.statusCodeStats ? Object.keys(result.statusCodeStats).filter((s) => Number(s) !== c.expectStatus) : [];
  if (wrong.length) throw new Error(`${c.name}: unexpected statuses ${wrong.join(", ")}`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const barePort = await freePort();
const gatewayPort = await freePort();
const bare = spawnProcess(process.execPath, ["bench/bare-server.mjs"], { PORT: String(barePort) });
const gateway = spawnTs("gateway/main.ts", { GATEWAY_PORT: String(gatewayPort), LOG_LEVEL: "warn" });
try {
  await httpReady(`http://127.0.0.1:${barePort}/`);
  await httpReady(`http://127.0.0.1:${gatewayPort}/healthz`, 60_000, gateway);
  const cases: Case[] = [
    { name: "bare node:http, small JSON", url: `http://127.0.0.1:${barePort}/`, expectStatus: 200 },
    { name: "gateway GET /healthz", url: `http://127.0.0.1:${gatewayPort}/healthz`, expectStatus: 200 },
    {
      name: "gateway POST /oauth/token, form parsed, refused (unsupported_grant_type)",
      url: `http://127.0.0.1:${gatewayPort}/oauth/token`,
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=password&client_id=svc&client_secret=svc-secret-0123456789&scope=organisation%3Aread",
      expectStatus: 400,
    },
    { name: "gateway unknown route (404 JSON)", url: `http://127.0.0.1:${gatewayPort}/nope`, expectStatus: 404 },
  ];
  const samples = cases.map(() => ({ rps: [] as number[], p99: [] as number[] }));
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cases.entries()) {
      const m = await measure(c);
      samples[i]!.rps.push(m.rps);
      samples[i]!.p99.push(m.p99);
    }
  }
  const rows = cases.map((c, i) => ({ ...c, rps: median(samples[i]!.rps), p99: median(samples[i]!.p99) }));
  const base = rows[0]!.rps;
  console.log(`\nmedian of ${rounds} rounds, ${seconds} s per case, 10 connections (compare ratios, not absolute numbers)\n`);
  console.log(`${"case".padEnd(72)} ${"req/s".padStart(9)} ${"p99 ms".padStart(7)} ${"vs bare".padStart(8)}`);
  for (const r of rows) {
    console.log(`${r.name.padEnd(72)} ${Math.round(r.rps).toString().padStart(9)} ${String(r.p99).padStart(7)} ${(r.rps / base).toFixed(2).padStart(8)}`);
  }
} finally {
  await gateway.kill();
  await bare.kill();
}
