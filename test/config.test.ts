// Configuration is read and validated once at start: the documented defaults,
// a ConfigError naming the variable for every bad value, and, as a process,
// one line on stderr naming the variable and exit code 1. A gateway that
// started drains on SIGTERM and exits 0.
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, requireBackends, requireInternalToken } from "../services/shared/config.js";
import { freePort, httpReady, spawnTs, type Spawned } from "./support/processes.js";

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

function configError(env: Record<string, string>): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  return caught as ConfigError;
}

describe("loadConfig", () => {
  it("gives the documented defaults for an empty environment", () => {
    const c = loadConfig({});
    expect(c.AUTH_RPC_PORT).toBe(7101);
    expect(c.ORGANISATION_RPC_PORT).toBe(7102);
    expect(c.WEBHOOK_RPC_PORT).toBe(7103);
    expect(c.DELIVERY_RPC_PORT).toBe(7104);
    expect(c.GATEWAY_PORT).toBe(8080);
    expect(c.RPC_HOST).toBe("127.0.0.1");
    expect(c.GATEWAY_HOST).toBe("127.0.0.1");
    expect(c.LOG_LEVEL).toBe("info");
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.NATS_URL).toBeUndefined();
    expect(c.INTERNAL_RPC_TOKEN).toEqual([]);
    expect(c.internalToken).toBeUndefined();
    expect(c.MIGRATE_ON_START).toBe(true);
    expect(c.WEBHOOK_ALLOW_INSECURE_TARGETS).toBe(false);
    expect(c.OAUTH_ALLOW_INSECURE_REDIRECTS).toBe(false);
    expect(c.NATS_STREAM).toBe("BIZCARD");
    expect(c.NATS_SUBJECT_PREFIX).toBe("bizcard");
    expect(c.RPC_TIMEOUT_MS).toBe(5000);
    expect(c.authRpcUrl).toBe("http://127.0.0.1:7101");
    expect(c.organisationRpcUrl).toBe("http://127.0.0.1:7102");
    expect(c.webhookRpcUrl).toBe("http://127.0.0.1:7103");
    expect(c.deliveryRpcUrl).toBe("http://127.0.0.1:7104");
    expect(c.publicUrl).toBe("http://localhost:8080");
  });

  it("reads the values it is given, and treats an empty optional value as unset", () => {
    const c = loadConfig({
      GATEWAY_PORT: "9090",
      AUTH_RPC_PORT: "7201",
      DATABASE_URL: "postgresql://u:p@db:5432/bizcard",
      NATS_URL: "nats://a:4222, nats://b:4222",
      INTERNAL_RPC_TOKEN: "x".repeat(32),
      MIGRATE_ON_START: "no",
      WEBHOOK_ALLOW_INSECURE_TARGETS: "1",
      ORGANISATION_RPC_URL: "https://org.internal:443",
      PUBLIC_URL: "https://api.example.com///",
      AUTH_RPC_URL: "",
    });
    expect(c.GATEWAY_PORT).toBe(9090);
    expect(c.DATABASE_URL).toBe("postgresql://u:p@db:5432/bizcard");
    expect(c.NATS_URL).toBe("nats://a:4222, nats://b:4222");
    expect(c.INTERNAL_RPC_TOKEN).toEqual(["x".repeat(32)]);
    expect(c.internalToken).toBe("x".repeat(32));
    expect(c.MIGRATE_ON_START).toBe(false);
    expect(c.WEBHOOK_ALLOW_INSECURE_TARGETS).toBe(true);
    expect(c.authRpcUrl).toBe("http://127.0.0.1:7201");
    expect(c.organisationRpcUrl).toBe("https://org.internal:443");
    expect(c.publicUrl).toBe("https://api.example.com");
    expect(c.publicUrl).not.toMatch(/\/$/);
    expect(loadConfig({ GATEWAY_PORT: "9090" }).publicUrl).toBe("http://localhost:9090");
  });

  it.each([
    ["GATEWAY_PORT", "abc"],
    ["GATEWAY_PORT", "70000"],
    ["GATEWAY_PORT", "-1"],
    ["GATEWAY_PORT", "80.5"],
    ["AUTH_RPC_PORT", "seven"],
    ["NATS_URL", "http://x"],
    ["NATS_URL", "nats://a:4222,http://b"],
    ["DATABASE_URL", "mysql://x"],
    ["DATABASE_URL", "not a url"],
    ["INTERNAL_RPC_TOKEN", "short"],
    ["INTERNAL_RPC_TOKEN", `${"n".repeat(32)},short`],
    ["INTERNAL_RPC_TOKEN", `${"n".repeat(32)},,${"o".repeat(32)}`],
    ["INTERNAL_RPC_TOKEN", `${"n".repeat(32)},`],
    ["MIGRATE_ON_START", "maybe"],
    ["WEBHOOK_ALLOW_INSECURE_TARGETS", "TRUE!"],
    ["LOG_LEVEL", "verbose"],
    ["RPC_TIMEOUT_MS", "10"],
    ["DATABASE_POOL_MAX", "0"],
    ["AUTH_RPC_URL", "ftp://x"],
    ["PUBLIC_URL", "example.com"],
    ["NATS_STREAM", "has space"],
  ])("refuses %s=%s with a ConfigError that starts with the variable's name", (variable, value) => {
    const err = configError({ [variable]: value });
    expect(err.name).toBe("ConfigError");
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
    expect(err.message.length).toBeGreaterThan(`${variable}: `.length);
    expect(err.message).not.toContain("\n");
  });

  it("treats a blank number as unset and accepts only decimal digits", () => {
    expect(loadConfig({ GATEWAY_PORT: "", AUTH_RPC_PORT: " " }).GATEWAY_PORT).toBe(8080);
    expect(loadConfig({ AUTH_RPC_PORT: " " }).authRpcUrl).toBe("http://127.0.0.1:7101");
    for (const bad of ["1e3", "0x1F90", "-1", "65536", "80.5"]) {
      expect(() => loadConfig({ GATEWAY_PORT: bad })).toThrow(/^GATEWAY_PORT: /);
    }
  });

  it("reads INTERNAL_RPC_TOKEN as a comma-separated list: every entry accepted, the first one sent", () => {
    const [next, old] = ["n".repeat(32), "o".repeat(40)];
    const c = loadConfig({ INTERNAL_RPC_TOKEN: ` ${next} , ${old} ` });
    expect(c.INTERNAL_RPC_TOKEN).toEqual([next, old]);
    expect(c.internalToken).toBe(next);
    expect(loadConfig({ INTERNAL_RPC_TOKEN: "  " }).INTERNAL_RPC_TOKEN).toEqual([]);
  });

  it("requires the internal credential on every RPC_HOST, loopback included", () => {
    for (const host of ["0.0.0.0", "127.0.0.1", "::1", "localhost"]) {
      let caught: unknown;
      try {
        requireInternalToken(loadConfig({ RPC_HOST: host }));
      } catch (err) {
        caught = err;
      }
      expect(caught, host).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).message).toMatch(/^INTERNAL_RPC_TOKEN: required.*\(unset\)$/);
      expect(() => requireInternalToken(loadConfig({ RPC_HOST: host, INTERNAL_RPC_TOKEN: "x".repeat(32) }))).not.toThrow();
    }
  });

  it("does not repeat a secret it refuses", () => {
    const err = configError({ INTERNAL_RPC_TOKEN: "hunter2-secret" });
    expect(err.message).not.toContain("hunter2-secret");
    const inList = configError({ INTERNAL_RPC_TOKEN: `${"k".repeat(32)},hunter2-secret` });
    expect(inList.message).not.toContain("hunter2-secret");
    expect(inList.message).not.toContain("k".repeat(32));
    expect(err.message).toMatch(/32/);
  });

  it("names the first bad variable when several are bad", () => {
    const err = configError({ GATEWAY_PORT: "abc", NATS_URL: "http://x" });
    expect(["GATEWAY_PORT", "NATS_URL"]).toContain(err.variable);
    expect(err.message.startsWith(`${err.variable}: `)).toBe(true);
  });

  it("requires the real backends of a standalone service, naming the missing one", () => {
    expect(() => requireBackends(loadConfig({}), {})).not.toThrow();
    const db = (() => {
      try {
        requireBackends(loadConfig({}), { database: true, nats: true });
      } catch (err) {
        return err;
      }
    })();
    expect(db).toBeInstanceOf(ConfigError);
    expect((db as ConfigError).message).toMatch(/^DATABASE_URL: .*\(unset\)$/);
    const nats = (() => {
      try {
        requireBackends(loadConfig({ DATABASE_URL: "postgres://h/db" }), { database: true, nats: true });
      } catch (err) {
        return err;
      }
    })();
    expect((nats as ConfigError).message).toMatch(/^NATS_URL: /);
  });
});

describe("a process with a bad configuration", () => {
  /** Runs a main.ts to its exit; returns the exit code and stderr alone. */
  async function runUntilExited(script: string, env: Record<string, string | undefined>): Promise<{ code: number | null; stderr: string; output: string }> {
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
    const { code, stderr } = await runUntilExited("services/organisation/main.ts", { NATS_URL: "nats://127.0.0.1:4222" });
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
    const { code, stderr, output } = await runUntilExited("gateway/main.ts", { GATEWAY_PORT: String(await freePort()) });
    expect(code).toBe(1);
    expectOneLineNaming(stderr, "INTERNAL_RPC_TOKEN");
    expect(output).not.toMatch(/listening/i);
  });

  it("gateway with a credential list holding a short entry exits 1 naming INTERNAL_RPC_TOKEN, without echoing it", async () => {
    const { code, stderr } = await runUntilExited("gateway/main.ts", { INTERNAL_RPC_TOKEN: `${"v".repeat(40)},tooshort-secret` });
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
    gateway = spawnTs("gateway/main.ts", { ...CLEAN_ENV, GATEWAY_PORT: String(port), INTERNAL_RPC_TOKEN: "x".repeat(32), LOG_LEVEL: "info" });
    await httpReady(`http://127.0.0.1:${port}/healthz`, 30_000, gateway);
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });

    const code = await gateway.kill("SIGTERM");
    expect(code, gateway.output()).toBe(0);
    expect(gateway.child.signalCode).toBeNull();
    // It drained rather than died: the shutdown is logged, and the port is closed.
    expect(gateway.output()).toMatch(/"msg":"stopped"/);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
  });
});

describe("the outbox relay's timings", () => {
  it("default to a 15 s lease, a 1 s poll and a 3 s publish timeout", () => {
    const c = loadConfig({});
    expect([c.OUTBOX_LEASE_MS, c.OUTBOX_POLL_MS, c.OUTBOX_PUBLISH_TIMEOUT_MS]).toEqual([15_000, 1000, 3000]);
    const fast = loadConfig({ OUTBOX_LEASE_MS: "1000", OUTBOX_POLL_MS: "100", OUTBOX_PUBLISH_TIMEOUT_MS: "300" });
    expect([fast.OUTBOX_LEASE_MS, fast.OUTBOX_POLL_MS, fast.OUTBOX_PUBLISH_TIMEOUT_MS]).toEqual([1000, 100, 300]);
  });

  it.each([
    [{ OUTBOX_LEASE_MS: "5000" }, /3 × .*publish timeout \(3000 ms\).*9000 ms or more/],
    [{ OUTBOX_LEASE_MS: "1000", OUTBOX_PUBLISH_TIMEOUT_MS: "400", OUTBOX_POLL_MS: "100" }, /1200 ms or more/],
    [{ OUTBOX_LEASE_MS: "20000", OUTBOX_POLL_MS: "10000" }, /poll interval \(10000 ms\).*30000 ms or more/],
  ])("refuse a lease that does not outlast 3 polls and 3 publishes (%o), naming OUTBOX_LEASE_MS on one line", (env, why) => {
    const err = configError(env);
    expect(err.variable).toBe("OUTBOX_LEASE_MS");
    expect(err.message.startsWith(`OUTBOX_LEASE_MS: ${env.OUTBOX_LEASE_MS} must be at least`)).toBe(true);
    expect(err.message).toMatch(why);
    expect(err.message).not.toContain("\n");
  });

  it("refuse a publish timeout that is not a number of milliseconds from 100 to 60000", () => {
    for (const bad of ["50", "60001", "3s"]) {
      expect(configError({ OUTBOX_PUBLISH_TIMEOUT_MS: bad }).variable).toBe("OUTBOX_PUBLISH_TIMEOUT_MS");
    }
  });

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
