// The gateway as its own process serves /metrics on GATEWAY_METRICS_PORT (on
// RPC_HOST), with its own requests counted by route template; its public port
// answers 404 there.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, httpReady, spawnTs, type Spawned } from "../support/processes.js";

let gateway: Spawned;
let publicPort: number;
let metricsPort: number;

beforeAll(async () => {
  [publicPort, metricsPort] = await Promise.all([freePort(), freePort()]);
  gateway = spawnTs("gateway/main.ts", {
    INTERNAL_RPC_TOKEN: "g".repeat(40),
    GATEWAY_PORT: String(publicPort),
    GATEWAY_METRICS_PORT: String(metricsPort),
    RPC_HOST: "127.0.0.1",
    NATS_URL: undefined,
    LOG_LEVEL: "warn",
  });
  await httpReady(`http://127.0.0.1:${publicPort}/healthz`, 60_000, gateway);
}, 90_000);

afterAll(async () => {
  expect(await gateway?.kill("SIGTERM")).toBe(0);
});

describe("the gateway process's metrics", () => {
  it("are on GATEWAY_METRICS_PORT, with the public requests counted by route template", async () => {
    expect((await fetch(`http://127.0.0.1:${publicPort}/healthz`)).status).toBe(200);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /^http_server_request_duration_seconds_count\{method="GET",route="\/healthz",status="200"\} [1-9]/m,
    );
    expect(text).toContain("# TYPE process_cpu_seconds_total counter");
    // Only /metrics is served there.
    expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(404);
  });

  it("are not on the public port", async () => {
    const res = await fetch(`http://127.0.0.1:${publicPort}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain("# TYPE");
  });
});
