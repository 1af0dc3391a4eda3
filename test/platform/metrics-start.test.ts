// `npm start` (one process, one registry) serves every service's metrics and
// the gateway's on GATEWAY_METRICS_PORT, and not on the public port.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpReady, platformPorts, spawnProcess, type Spawned } from "../support/processes.js";

let dataDir: string;
let env: Record<string, string>;
let platform: Spawned | undefined;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-metrics-"));
  env = {
    DATABASE_URL: "",
    NATS_URL: "",
    INTERNAL_RPC_TOKEN: "",
    DATA_DIR: dataDir,
    ...(await platformPorts()),
    LOG_LEVEL: "warn",
  };
});

afterAll(async () => {
  if (platform && platform.child.exitCode === null) process.kill(-platform.child.pid!, "SIGTERM");
  await platform?.exited;
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("npm start's metrics", () => {
  it("are every service's and the gateway's, at GATEWAY_METRICS_PORT/metrics only", async () => {
    platform = spawnProcess("npm", ["start", "--silent"], env);
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 150_000, platform);
    // The demo data went through the organisation and auth RPCs; /readyz through the gateway.
    const res = await fetch(`http://127.0.0.1:${env.GATEWAY_METRICS_PORT}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(
      /^rpc_server_duration_seconds_count\{service="organisation",method="CreateOrganisation",code="ok"\} [1-9]/m,
    );
    expect(text).toMatch(/^rpc_server_duration_seconds_count\{service="auth",method="CreateClient",code="ok"\} [1-9]/m);
    expect(text).toMatch(
      /^http_server_request_duration_seconds_count\{method="GET",route="\/readyz",status="200"\} [1-9]/m,
    );
    for (const service of ["auth", "organisation"])
      expect(text).toMatch(new RegExp(`^outbox_pending_events\\{service="${service}"\\} \\d`, "m"));
    expect(text).toMatch(/^webhook_deliveries_due \d/m);
    expect((await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/metrics`)).status).toBe(404);
  }, 180_000);
});
