// As a process, a bad configuration is one line on stderr naming the
// variable and exit code 1, before any backend is touched. A gateway that
// started drains on SIGTERM and exits 0. (What loadConfig accepts and
// refuses: test/unit/config.test.ts.)
import { afterAll, describe, expect, it } from "vitest";
import { freePort, httpReady, spawnTs, type Spawned } from "../support/processes.js";

/** Every variable the configuration reads, unset: a child sees only what a test gives it. */
const CLEAN_ENV: Record<string, undefined> = Object.fromEntries(
  [
    "LOG_LEVEL",
    "DATABASE_URL",
    "DATABASE_POOL_MAX",
    "MIGRATE_ON_START",
    "NATS_URL",
    "NATS_STREAM",
    "NATS_SUBJECT_PREFIX",
    "NATS_STREAM_REPLICAS",
    "NATS_DUPLICATE_WINDOW_SECONDS",
    "INTERNAL_RPC_TOKEN",
    "RPC_HOST",
    "RPC_TIMEOUT_MS",
    "AUTH_RPC_PORT",
    "ORGANISATION_RPC_PORT",
    "WEBHOOK_RPC_PORT",
    "DELIVERY_RPC_PORT",
    "AUTH_RPC_URL",
    "ORGANISATION_RPC_URL",
    "WEBHOOK_RPC_URL",
    "DELIVERY_RPC_URL",
    "GATEWAY_HOST",
    "GATEWAY_PORT",
    "PUBLIC_URL",
    "DATA_DIR",
    "WEBHOOK_ALLOW_INSECURE_TARGETS",
    "OAUTH_ALLOW_INSECURE_REDIRECTS",
    "OUTBOX_POLL_MS",
    "OUTBOX_LEASE_MS",
    "OUTBOX_PUBLISH_TIMEOUT_MS",
  ].map((k) => [k, undefined]),
);

describe("a process with a bad configuration", () => {
  /** Runs a main.ts to its exit; returns the exit code and stderr alone. */
  async function runUntilExited(
    script: string,
    env: Record<string, string | undefined>,
  ): Promise<{ code: number | null; stderr: string; output: string }> {
    const p = spawnTs(script, { ...CLEAN_ENV, ...env });
    let stderr = "";
    p.child.stderr!.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.child.kill("SIGKILL"), 30_000);
    const code = await p.exited;
    clearTimeout(timer);
    return { code, stderr, output: p.output() };
  }

  function expectOneLineNaming(stderr: string, variable: string): void {
    const lines = stderr.split("\n").filter((l) => l.length > 0);
    expect(lines, stderr).toHaveLength(1);
    expect(stderr.endsWith("\n")).toBe(true);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toMatch(new RegExp(`\\b${variable}: `));
    expect(lines[0]).not.toMatch(/\bat .+:\d+/);
  }

  it("organisation without DATABASE_URL exits 1 with one line naming DATABASE_URL", async () => {
    const { code, stderr } = await runUntilExited("services/organisation/main.ts", {
      NATS_URL: "nats://127.0.0.1:4222",
    });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "DATABASE_URL");
  });

  it("organisation with a bad value exits 1 before it touches any backend", async () => {
    const { code, stderr, output } = await runUntilExited("services/organisation/main.ts", {
      DATABASE_URL: "mysql://x",
      NATS_URL: "nats://127.0.0.1:4222",
    });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "DATABASE_URL");
    expect(output).not.toMatch(/listening/i);
  });

  it.each(["127.0.0.1", "0.0.0.0"])(
    "organisation on RPC_HOST=%s without INTERNAL_RPC_TOKEN exits 1 with one line naming it, before it listens",
    async (host) => {
      const { code, stderr, output } = await runUntilExited("services/organisation/main.ts", {
        DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
        NATS_URL: "nats://127.0.0.1:4222",
        RPC_HOST: host,
        ORGANISATION_RPC_PORT: String(await freePort()),
      });
      expect(code).toBe(1);
      expectOneLineNaming(stderr, "INTERNAL_RPC_TOKEN");
      expect(output).not.toMatch(/listening/i);
    },
  );

  it("gateway without INTERNAL_RPC_TOKEN exits 1 with one line naming it", async () => {
    const { code, stderr, output } = await runUntilExited("gateway/main.ts", {
      GATEWAY_PORT: String(await freePort()),
    });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "INTERNAL_RPC_TOKEN");
    expect(output).not.toMatch(/listening/i);
  });

  it("gateway with a credential list holding a short entry exits 1 naming INTERNAL_RPC_TOKEN, without echoing it", async () => {
    const { code, stderr } = await runUntilExited("gateway/main.ts", {
      INTERNAL_RPC_TOKEN: `${"v".repeat(40)},tooshort-secret`,
    });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "INTERNAL_RPC_TOKEN");
    expect(stderr).not.toContain("tooshort-secret");
    expect(stderr).not.toContain("v".repeat(40));
  });

  it("gateway with GATEWAY_PORT=abc exits 1 with one line naming GATEWAY_PORT", async () => {
    const { code, stderr, output } = await runUntilExited("gateway/main.ts", { GATEWAY_PORT: "abc" });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "GATEWAY_PORT");
    expect(output).not.toMatch(/listening/i);
  });
});

describe("a gateway process", () => {
  let gateway: Spawned | undefined;
  afterAll(async () => {
    if (gateway && gateway.child.exitCode === null && gateway.child.signalCode === null) await gateway.kill("SIGKILL");
  });

  it("starts on the GATEWAY_PORT it is given, answers /healthz, and exits 0 on SIGTERM", async () => {
    const port = await freePort();
    gateway = spawnTs("gateway/main.ts", {
      ...CLEAN_ENV,
      GATEWAY_PORT: String(port),
      GATEWAY_METRICS_PORT: "0",
      INTERNAL_RPC_TOKEN: "x".repeat(32),
      LOG_LEVEL: "info",
    });
    await httpReady(`http://127.0.0.1:${port}/healthz`, 30_000, gateway);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", version: expect.any(String) });

    const code = await gateway.kill("SIGTERM");
    expect(code, gateway.output()).toBe(0);
    expect(gateway.child.signalCode).toBeNull();
    // It drained rather than died: the shutdown is logged, and the port is closed.
    expect(gateway.output()).toMatch(/"msg":"stopped"/);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
  });
});

describe("the outbox relay's timings", () => {
  it("stop the organisation process with one line naming OUTBOX_LEASE_MS, exit 1", async () => {
    const p = spawnTs("services/organisation/main.ts", {
      ...CLEAN_ENV,
      DATABASE_URL: "postgres://127.0.0.1:1/none",
      NATS_URL: "nats://127.0.0.1:1",
      OUTBOX_LEASE_MS: "2000",
    });
    let stderr = "";
    p.child.stderr!.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => p.child.kill("SIGKILL"), 30_000);
    const code = await p.exited;
    clearTimeout(timer);
    expect(code, p.output()).toBe(1);
    expect(stderr).toMatch(/^configuration error: OUTBOX_LEASE_MS: 2000 must be at least [^\n]+\n$/);
  });
});
