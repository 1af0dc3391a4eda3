// Configuration is read and validated once at start: the documented defaults,
// and a ConfigError naming the variable for every bad value. No database, no
// process: what a process does with a bad configuration is in
// test/platform/config-processes.test.ts.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, requireBackends, requireInternalToken } from "../../services/shared/config.js";

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
      expect(() =>
        requireInternalToken(loadConfig({ RPC_HOST: host, INTERNAL_RPC_TOKEN: "x".repeat(32) })),
      ).not.toThrow();
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
  ])(
    "refuse a lease that does not outlast 3 polls and 3 publishes (%o), naming OUTBOX_LEASE_MS on one line",
    (env, why) => {
      const err = configError(env);
      expect(err.variable).toBe("OUTBOX_LEASE_MS");
      expect(err.message.startsWith(`OUTBOX_LEASE_MS: ${env.OUTBOX_LEASE_MS} must be at least`)).toBe(true);
      expect(err.message).toMatch(why);
      expect(err.message).not.toContain("\n");
    },
  );

  it("refuse a publish timeout that is not a number of milliseconds from 100 to 60000", () => {
    for (const bad of ["50", "60001", "3s"]) {
      expect(configError({ OUTBOX_PUBLISH_TIMEOUT_MS: bad }).variable).toBe("OUTBOX_PUBLISH_TIMEOUT_MS");
    }
  });
});
