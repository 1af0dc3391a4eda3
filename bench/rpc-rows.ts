// The RPC group of the benchmark (bench/run.ts): its targets and cases
// (GetOrganisation through the project's client against the organisation
// service as its own process, the same select directly with `pg`, the same RPC
// with the service in this process, and through a stock connect-node client
// in a process of its own), and its floors.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import { loadConfig } from "../services/shared/config.js";
import { openBus } from "../services/shared/event-bus/open-bus.js";
import { createLogger } from "../services/shared/logger.js";
import { createRpcClient, serveInProcess } from "../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../services/shared/rpc/server.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { loopCase as loopCaseFor, type Case } from "./cases.js";
import { startRpcTarget, type RpcTarget } from "./rpc-target.js";

const execFileAsync = promisify(execFile);

const num = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

export interface RpcCases {
  cases: Case[];
  /** Stops every target the cases call. */
  close(): Promise<void>;
}

/** The RPC group's targets, started, and its cases, each a closed loop of `rpcSeconds` a round. */
export async function startRpcCases(rpcSeconds: number): Promise<RpcCases> {
  const loopCase = (name: string, call: () => Promise<unknown>, inFlight: number) =>
    loopCaseFor(name, call, inFlight, rpcSeconds);
  let target: RpcTarget | undefined;
  let pool: pg.Pool | undefined;
  let local: { app: ServiceApp; server: RunningServer; close: () => Promise<void> } | undefined;
  const close = async () => {
    await pool?.end();
    await local?.close();
    await target?.close();
  };
  try {
    // The service logs at info, as `npm start` runs it.
    target = await startRpcTarget([], {}, process.env.BENCH_RPC_CWD);
    const { organisationId } = target;
    const client = createRpcClient(OrganisationService, {
      baseUrl: target.url,
      timeoutMs: 5000,
      internalToken: target.token,
    });
    const rpc = async () => {
      const res = await client.getOrganisation({ id: organisationId });
      if (res.organisation?.id !== organisationId) throw new Error("GetOrganisation answered another organisation");
    };
    pool = new pg.Pool({ connectionString: target.databaseUrl, max: 10 });
    const sql = `select "id", "name", "created_at" from "organisation"."organisation" where "id" = $1`;
    const direct = async () => {
      const res = await pool!.query(sql, [organisationId]);
      if (res.rows[0]?.id !== organisationId) throw new Error("pg answered another row");
    };
    // The same service in this process, on the same database, as the embedded start runs it.
    const config = loadConfig({
      DATABASE_URL: target.databaseUrl,
      MIGRATE_ON_START: "false",
      INTERNAL_RPC_TOKEN: target.token,
      LOG_LEVEL: "info",
    });
    // Its successful calls log at debug either way; warn keeps its start line out of the table.
    const logger = createLogger("organisation", "warn");
    const bus = await openBus(config, "bench", logger);
    const app = await createOrganisationApp({
      config,
      databaseUrl: target.databaseUrl,
      databasePoolMax: config.DATABASE_POOL_MAX,
      bus,
      logger,
    });
    const server = await startRpcServer({
      name: "organisation",
      host: "127.0.0.1",
      port: 0,
      routes: app.routes,
      logger,
      internalTokens: [target.token],
    });
    const undo = serveInProcess(server.url, server.inProcess);
    local = { app, server, close: async () => (undo(), await server.close(), await app.close(), await bus.close()) };
    const inProcess = createRpcClient(OrganisationService, {
      baseUrl: server.url,
      timeoutMs: 5000,
      internalToken: target.token,
    });
    const rpcInProcess = async () => {
      const res = await inProcess.getOrganisation({ id: organisationId });
      if (res.organisation?.id !== organisationId) throw new Error("GetOrganisation answered another organisation");
    };
    // The stock client runs in a process of its own, as another team's service would (stock-client-load.ts).
    const stock = (httpVersion: "1.1" | "2", inFlight: number): Case => ({
      group: "rpc",
      name: `RPC GetOrganisation via stock connect-node client, HTTP/${httpVersion}, ${inFlight} in flight`,
      run: async () => {
        const { stdout } = await execFileAsync(process.execPath, ["--import", "tsx", "bench/stock-client-load.ts"], {
          env: {
            ...process.env,
            BENCH_URL: target!.url,
            BENCH_TOKEN: target!.token,
            BENCH_ORGANISATION_ID: organisationId,
            BENCH_HTTP_VERSION: httpVersion,
            BENCH_IN_FLIGHT: String(inFlight),
            BENCH_SECONDS: String(rpcSeconds),
          },
        });
        const r = JSON.parse(stdout) as { perSecond: number; medianMs: number };
        return { rps: r.perSecond, latency: r.medianMs };
      },
    });
    const cases = [
      loopCase("RPC GetOrganisation via createRpcClient, 1 in flight", rpc, 1),
      loopCase("RPC GetOrganisation via createRpcClient, 10 in flight", rpc, 10),
      loopCase("same select directly with pg, 1 in flight", direct, 1),
      loopCase("same select directly with pg (pool of 10), 10 in flight", direct, 10),
      loopCase("RPC GetOrganisation, service in this process (npm start), 1 in flight", rpcInProcess, 1),
      loopCase("RPC GetOrganisation, service in this process (npm start), 10 in flight", rpcInProcess, 10),
      stock("1.1", 1),
      stock("1.1", 10),
    ];
    // A service of before h2c answers HTTP/2 not at all.
    if (!process.env.BENCH_RPC_CWD) {
      cases.push(stock("2", 1), stock("2", 10));
    }
    return { cases, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The RPC path's floors, from the group's rows measured in their own rounds; `base`: their bare row's calls/s. */
export function printRpcFloors(rows: readonly { name: string; rps: number; latency: number }[], base: number): void {
  // The RPC path floors: median <= 1.5 ms one at a time, >= 0.06x bare with 10 in flight. They are
  // the project's client's. A stock connect-node client (what another team's service would use)
  // gets the same figures without a verdict: with 10 in flight its own process, not the service,
  // sets its pace (docs/benchmark.md, "A stock connect-node client").
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  for (const [label, prefix, floor] of [
    ["service in its own process, over HTTP", "RPC GetOrganisation via createRpcClient", true],
    ["service in this process (npm start)", "RPC GetOrganisation, service in this process (npm start)", true],
    ["stock connect-node client, HTTP/1.1", "RPC GetOrganisation via stock connect-node client, HTTP/1.1", false],
    ["stock connect-node client, HTTP/2", "RPC GetOrganisation via stock connect-node client, HTTP/2", false],
  ] as const) {
    const one = rows.find((r) => r.name === `${prefix}, 1 in flight`);
    const ten = rows.find((r) => r.name === `${prefix}, 10 in flight`);
    if (!one || !ten) continue;
    const tenX = ten.rps / base;
    const oneAtATime = `median one at a time ${num(one.latency, 2)} ms`;
    const tenInFlight = `10 in flight ${tenX.toFixed(3)}x bare`;
    console.log(
      floor
        ? `\nfloors, ${label}: ${oneAtATime} (<= 1.5: ${verdict(one.latency <= 1.5)}); ${tenInFlight} (>= 0.06: ${verdict(tenX >= 0.06)})`
        : `\nfor comparison (no floor), ${label}: ${oneAtATime}; ${tenInFlight}`,
    );
  }
}
