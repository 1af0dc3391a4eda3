// npm run bench: the gateway's own cost and the RPC path's, as ratios against
// a bare node:http server measured in the same run (absolute numbers drift
// between machines). Each server is its own process; the load is made here,
// on the same two cores.
//
// - HTTP rows: autocannon, 10 connections.
// - RPC rows: GetOrganisation (one primary-key read) through the project's own
//   client (createRpcClient) against the organisation service as its own
//   process on this machine's PostgreSQL (a fresh database, dropped after) and
//   NATS JetStream (a unique stream, deleted after); and the same select
//   issued directly with `pg`; and the same RPC with the service in this
//   process, reached in memory as `npm start` does (serveInProcess); and the
//   same RPC through a stock connect-node client (createConnectTransport,
//   binary, HTTP/1.1 and HTTP/2) in a process of its own, what another team's
//   service would be (bench/stock-client-load.ts). One
//   call at a time, and 10 in flight (bench/rpc-rows.ts). BENCH_RPC_CWD: run the service of
//   another checkout (a before/after comparison).
//
// - OAuth rows: the token endpoint (client_credentials, form-encoded,
//   through the gateway of the platform as `npm start` runs it, on this
//   machine's PostgreSQL and NATS: tokens durable) against two peers,
//   oidc-provider in memory and on a durable PostgreSQL adapter (bench/peer/,
//   installed into the temporary directory on first use; its stored tokens
//   counted after); introspection of an active token against each peer's;
//   and GET /oauth/me with a bearer token against bare node:http.
//   autocannon, 10 connections (bench/oauth-rows.ts).
//
// - Delivery rows: the webhook pipeline of the platform as `npm
//   start` runs it on PostgreSQL and NATS (bench/delivery-target.ts): contacts
//   created over RPC, open loop, at fixed rates of 200, 500 and 1,000/s with
//   one matching subscription each, each rate BENCH_RATE_PASSES (7) times for
//   BENCH_RATE_SECONDS (3) and its pass with the median p95, then as a burst
//   (32 calls in flight) with 1 and with 10 subscriptions each, and with one
//   ordered subscription, each burst BENCH_BURST_PASSES (3) times and its
//   median pass (bench/delivery-passes.ts);
//   a local receiver answers 200. Deliveries/s, and commit-to-arrival latency
//   p50/p95/p99 (commit: CreateContact returned; arrival: the receiver had the
//   POST). Then the noisy neighbour (bench/noisy-neighbour.ts), passes of
//   BENCH_DELIVERY_SECONDS (default 10): 200/s again while
//   another owner has events queued for one subscription whose target
//   answers, then whose target never answers; the p95 ratio, floor 1.5x.
//
// BENCH_DELIVERY_CASES=noisy: the warm-up and the noisy neighbour only.
// BENCH_LAYOUT=distributed: the delivery rows against `npm run start:distributed`
// (compiled: the same processes compiled, as the containers run them)
// (each service and the gateway a process of its own), each one's peak memory.
// Every row goes to bench/results/<time>-<group>.json (bench/results.ts).
// The cases take turns for BENCH_ROUNDS rounds of BENCH_SECONDS each (the RPC
// rows' BENCH_RPC_SECONDS, 2) (each HTTP case warmed up for 3 s before its first), and the median round
// counts (one run is noisy here). The HTTP and OAuth rows take their turns
// first, the RPC rows after them, with the bare row again in their rounds:
// the RPC rows run a service in this process, whose work would otherwise
// share the CPU of autocannon (in this process too) with every other row. BENCH_ONLY=http, rpc, oauth or
// delivery runs one group (and the bare row), a comma-separated list
// (http,oauth) several; memory: the embedded start's
// time and peak memory (bench/memory.ts; after a full run also the loaded
// platforms' peaks).
import { randomBytes } from "node:crypto";
import { freePort, httpReady, spawnProcess, spawnTs, type Spawned } from "../test/support/processes.js";
import { httpCase as httpCaseFor, type Case, type Sample } from "./cases.js";
import { deliveryRows } from "./delivery-rows.js";
import { startDeliveryTarget, type DeliveryTarget } from "./delivery-target.js";
import { startPeers, startPlatform, type Peers, type PlatformTarget } from "./oauth-target.js";
import { seedAccessTokens } from "./growth.js";
import { oauthGrowth } from "./growth-rows.js";
import { probeMachine } from "./machine-probe.js";
import { memoryRows, peaksOf } from "./memory.js";
import { oauthCases, oauthGrowthPairs, printOauthRows } from "./oauth-rows.js";
import { writeResults } from "./results.js";
import { printRpcFloors, startRpcCases, type RpcCases } from "./rpc-rows.js";
import { ADMIN_DATABASE_URL } from "./rpc-target.js";
import { median } from "./stats.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const only = process.env.BENCH_ONLY;
const wants = (group: Case["group"] | "delivery" | "memory") => !only || only.split(",").includes(group);
const machine = await probeMachine(ADMIN_DATABASE_URL);
const httpCase = (name: string, c: Parameters<typeof httpCaseFor>[1], group?: Case["group"]) =>
  httpCaseFor(name, c, seconds, group);
// The RPC rows' closed loops make thousands of calls a second: 2 s a round is plenty, and keeps the run under ten minutes.
const rpcSeconds = Number(process.env.BENCH_RPC_SECONDS ?? 2);

type Row = Case & { rps: number; latency: number; rounds: number[]; stolen: (number | undefined)[] };

/** The cases take turns for `rounds` rounds; each row is its median round. The first case is the bare row. */
async function measure(cases: Case[]): Promise<{ rows: Row[]; base: number }> {
  const samples = cases.map(() => [] as Sample[]);
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cases.entries()) samples[i]!.push(await c.run());
  }
  const rows = cases.map((c, i) => ({
    ...c,
    rps: median(samples[i]!.map((s) => s.rps)),
    latency: median(samples[i]!.map((s) => s.latency)),
    rounds: samples[i]!.map((s) => Math.round(s.rps)),
    stolen: samples[i]!.map((s) => s.stolenPercent),
  }));
  return { rows, base: rows[0]!.rps };
}

const processes: Spawned[] = [];
let rpc: RpcCases | undefined;
let platform: PlatformTarget | undefined;
let grownPlatform: PlatformTarget | undefined;
let tokensSeedMs = 0;
let peers: Peers | undefined;
let delivery: DeliveryTarget | undefined;
let twin: DeliveryTarget | undefined;
try {
  const barePort = await freePort();
  const bare = spawnProcess(process.execPath, ["bench/bare-server.mjs"], { PORT: String(barePort) });
  processes.push(bare);
  await httpReady(`http://127.0.0.1:${barePort}/`);
  const cases: Case[] = [
    httpCase("bare node:http, small JSON", { url: `http://127.0.0.1:${barePort}/`, expectStatus: 200 }),
  ];

  if (wants("http")) {
    const gatewayPort = await freePort();
    // Metrics on a free port too: an npm start left running here holds the default (9464).
    const [port, metricsPort, token] = [
      String(gatewayPort),
      String(await freePort()),
      randomBytes(32).toString("base64url"),
    ];
    const gateway = spawnTs("gateway/main.ts", {
      GATEWAY_PORT: port,
      GATEWAY_METRICS_PORT: metricsPort,
      LOG_LEVEL: "warn",
      INTERNAL_RPC_TOKEN: token,
    });
    processes.push(gateway);
    await httpReady(`http://127.0.0.1:${gatewayPort}/healthz`, 60_000, gateway);
    const g = `http://127.0.0.1:${gatewayPort}`;
    cases.push(
      httpCase("gateway GET /healthz", { url: `${g}/healthz`, expectStatus: 200 }),
      // grant_type is the auth service's to judge (not running here); a repeated
      // parameter is the gateway's own refusal, after the whole form is parsed.
      httpCase("gateway POST /oauth/token, form parsed, refused (a repeated parameter)", {
        url: `${g}/oauth/token`,
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=password&client_id=svc&client_secret=svc-secret-0123456789&scope=organisation%3Aread&scope=organisation%3Aread",
        expectStatus: 400,
      }),
      httpCase("gateway unknown route (404 JSON)", { url: `${g}/nope`, expectStatus: 404 }),
    );
  }

  if (wants("oauth")) {
    peers = await startPeers();
    platform = await startPlatform();
    // Growth: a second platform with a million access tokens stored, each of its cases in turn
    // with the first's (BENCH_GROWTH=0: not; growth-rows.ts).
    if (process.env.BENCH_GROWTH !== "0") {
      grownPlatform = await startPlatform();
      tokensSeedMs = await seedAccessTokens(grownPlatform.databaseUrl);
    }
    cases.push(...oauthCases(peers, platform, seconds, grownPlatform));
  }

  // The rounds, group by group: the HTTP and OAuth rows first, then the RPC rows, whose
  // in-process service (and its AsyncLocalStorage) would otherwise share this process, and
  // so autocannon's CPU, with every other row. Each phase measures the bare row in its own rounds.
  const { rows, base } = await measure(cases);
  const num = (n: number, digits = 0) =>
    n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  console.log(
    `\nmedian of ${rounds} rounds, ${seconds} s per case, ${rpcSeconds} s per RPC case (compare ratios, not absolute numbers)`,
  );
  const table = (
    tableRows: Row[],
    tableBase: number,
    group: Case["group"],
    title: string,
    latency: string,
    digits: number,
  ) => {
    console.log(`\n${title.padEnd(80)} ${"calls/s".padStart(9)} ${latency.padStart(9)} ${"vs bare".padStart(8)}`);
    for (const r of tableRows.filter((r) => r.group === group || (group === "rpc" && r === tableRows[0]))) {
      console.log(
        `${r.name.padEnd(80)} ${num(r.rps).padStart(9)} ${num(r.latency, r === tableRows[0] ? 0 : digits).padStart(9)} ${(r.rps / tableBase).toFixed(3).padStart(8)}`,
      );
    }
  };
  if (wants("http")) table(rows, base, "http", "HTTP, 10 connections (autocannon)", "p99 ms", 0);
  const growth: {
    oauth?: Awaited<ReturnType<typeof oauthGrowth>>;
    delivery?: Awaited<ReturnType<typeof deliveryRows>>["growth"];
  } = {};
  let oauthFloors: ReturnType<typeof printOauthRows> | undefined;
  if (wants("oauth")) {
    oauthFloors = printOauthRows(rows, await peers!.durable.storedRows!("ClientCredentials"), seconds);
    if (grownPlatform) growth.oauth = oauthGrowth(tokensSeedMs, oauthGrowthPairs(rows));
  }
  // The OAuth platform's peak, then every target of the first phase stops: what follows runs without them.
  const peaks = await peaksOf({ "platform (npm start on PostgreSQL + NATS), after the OAuth rows": platform?.pid });
  await platform?.close();
  await grownPlatform?.close();
  await peers?.close();
  platform = undefined;
  grownPlatform = undefined;
  peers = undefined;
  for (const p of processes.splice(1)) await p.kill();
  if (wants("rpc")) {
    rpc = await startRpcCases(rpcSeconds);
    const measured = await measure([cases[0]!, ...rpc.cases]);
    // In the results file beside the first phase's rows, with the bare row of their own rounds.
    rows.push(...measured.rows.map((r, i) => (i === 0 ? { ...r, name: `${r.name} (the RPC rows' rounds)` } : r)));
    table(
      measured.rows,
      measured.base,
      "rpc",
      "RPC path (bare row: autocannon, its p99; measured in the RPC rows' own rounds)",
      "median ms",
      2,
    );
    printRpcFloors(measured.rows, measured.base);
  }
  // The RPC rows' targets stop too: the delivery rows run alone on the machine.
  await rpc?.close();
  rpc = undefined;
  let deliveryResults: Awaited<ReturnType<typeof deliveryRows>> | undefined;
  if (wants("delivery")) {
    // After the other groups, alone on the machine. Growth: a twin with 100,000 deliveries stored,
    // each pass in turn with the rows' own (BENCH_GROWTH=0: not; delivery-rows.ts).
    delivery = await startDeliveryTarget();
    const noisyOnly = process.env.BENCH_DELIVERY_CASES === "noisy";
    if (process.env.BENCH_GROWTH !== "0" && !noisyOnly) twin = await startDeliveryTarget();
    deliveryResults = await deliveryRows(delivery, Number(process.env.BENCH_DELIVERY_SECONDS ?? 10), noisyOnly, twin);
    growth.delivery = deliveryResults.growth;
    await twin?.close();
    twin = undefined;
  }
  // Last: the loaded platforms' peaks, then the embedded start alone on the machine: the
  // delivery rows' platform is stopped first (before, its workers, relays and sweeps ran
  // beside the embedded starts, which took 5.1 s in a full run against 4.3 s alone).
  const deliveryPeaks = await peaksOf(
    Object.fromEntries(
      Object.entries((await delivery?.processes()) ?? {}).map(([name, pid]) => [
        `${name}, after the delivery rows`,
        pid,
      ]),
    ),
  );
  await delivery?.close();
  delivery = undefined;
  const memory = wants("memory") ? await memoryRows({ ...peaks, ...deliveryPeaks }, true) : undefined;
  const machineAtEnd = await probeMachine(ADMIN_DATABASE_URL, "machine at the end", machine);
  const file = await writeResults(
    only ?? "all",
    {
      seconds,
      rpcSeconds,
      rounds,
      deliverySeconds: Number(process.env.BENCH_DELIVERY_SECONDS ?? 10),
      deliveryCases: process.env.BENCH_DELIVERY_CASES ?? "all",
      noisyRounds: Number(process.env.BENCH_NOISY_ROUNDS ?? 3),
      // What this environment changes of the platform's delivery settings (passed on to it).
      platformEnv: Object.fromEntries(
        Object.entries(process.env).filter(([k]) => /^(WEBHOOK|DELIVERY|OUTBOX)_/.test(k)),
      ),
      machine,
      machineAtEnd, // a run whose end differs much from its start ran on a machine that changed speed
    },
    {
      // Each round's calls/s beside the median (how much one run moved), and the CPU stolen in it (%).
      rows: rows.map(({ group, name, rps, latency, rounds, stolen }) => ({
        group,
        name,
        rps,
        latency,
        rounds,
        stolen,
      })),
      // The OAuth floors' ratios, each the median of its rounds' (oauth-rows.ts pairedRatio), and the durable peer's stored tokens.
      oauthFloors,
      delivery: deliveryResults && { ...deliveryResults, growth: undefined },
      growth,
      memory,
    },
  );
  console.log(`\nresults: ${file}`);
} finally {
  await delivery?.close();
  await twin?.close();
  await rpc?.close();
  await platform?.close();
  await grownPlatform?.close();
  await peers?.close();
  for (const p of processes) await p.kill();
}
