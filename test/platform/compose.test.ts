// docker-compose.yml, checked without a Docker engine (the Dockerfile:
// dockerfile.test.ts).
// Where the compose plugin is installed, `docker compose config` validates the
// file; everywhere, the file read with the yaml package (anchors, aliases and
// `<<` merges resolved) gives every service's effective settings, and these
// are checked against what the code needs: each variable is one that services/shared/config.ts reads, the
// values pass loadConfig, the hostnames and ports agree, and the image holds
// what its commands run.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR} in these strings is compose's interpolation, the subject here
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseDocument, visit } from "yaml";
import { loadConfig, requireBackends } from "../../services/shared/config.js";
import { tracesUrl } from "../../services/shared/trace/tracing.js";
import { ROOT } from "../support/processes.js";
import { GATEWAY_NODE_FLAGS, SERVICE_NODE_FLAGS } from "../../scripts/platform-processes.js";

type Yaml = string | null | Yaml[] | { [key: string]: Yaml };
type YamlMap = { [key: string]: Yaml };

/**
 * docker-compose.yml as compose reads it (the yaml package: anchors, aliases,
 * `<<` merges; a duplicate key or an unknown alias is an error). Scalars keep
 * their text as written (compose passes `PORT: 7101` on as "7101"); an empty
 * value is null (compose passes the host's variable through).
 */
function readYaml(source: string): Yaml {
  const parsed = parseDocument(source, { merge: true, uniqueKeys: true, strict: true });
  if (parsed.errors.length) throw parsed.errors[0];
  visit(parsed, {
    Scalar(_, node) {
      if (node.value !== null && typeof node.value !== "string") node.value = node.source;
    },
  });
  return parsed.toJS() as Yaml;
}

/** Compose interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?err}, ${VAR?err}, $$. */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (all, name, op, arg, bare) => {
      if (all === "$$") return "$";
      if (bare) return env[bare] ?? "";
      const v = env[name as string];
      const missing = op?.startsWith(":") ? v === undefined || v === "" : v === undefined;
      if (!op) return v ?? "";
      if (op.endsWith("-")) return missing ? (arg as string) : v!;
      if (missing) throw new Error(`required variable ${name}: ${arg}`);
      return v!;
    },
  );
}

// ---------------------------------------------------------------------------

const composeText = readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8");
const TOKEN = "compose-test-token-0123456789abcdef";
const KEY = Buffer.alloc(32, "compose-test-key").toString("base64");
const HOST_ENV = { INTERNAL_RPC_TOKEN: TOKEN, WEBHOOK_SECRET_ENCRYPTION_KEY: KEY };

const SERVICES = { auth: 7101, organisation: 7102, webhook: 7103, delivery: 7104 } as const;
type ServiceName = keyof typeof SERVICES;
const PLATFORM = [...(Object.keys(SERVICES) as ServiceName[]), "gateway"] as const;

const doc = readYaml(composeText) as YamlMap;
const services = doc.services as Record<string, YamlMap>;

function environment(service: string, env: Record<string, string | undefined> = HOST_ENV): Record<string, string> {
  const e = services[service]!.environment;
  expect(e, `${service}: environment must be a mapping`).toBeTypeOf("object");
  expect(Array.isArray(e)).toBe(false);
  return Object.fromEntries(
    Object.entries(e as YamlMap).map(([k, v]) => {
      expect(typeof v, `${service}.${k} needs a value (compose would pass the host's through)`).toBe("string");
      return [k, interpolate(v as string, env)];
    }),
  );
}

function dockerComposeAvailable(): boolean {
  const r = spawnSync("docker", ["compose", "version"], { encoding: "utf8", timeout: 15_000 });
  return r.status === 0;
}

describe("the YAML reader (so that the checks below read the file right)", () => {
  it("resolves anchors, merges and flow sequences, keeps scalars as written, and refuses unknown aliases and duplicate keys", () => {
    const y = readYaml(
      [
        "a: &x",
        "  k: 1",
        "  j: 'it''s'",
        "b:",
        "  <<: *x",
        '  k: "2" # comment',
        'c: ["p", "q"]',
        "d:",
        "  - one",
        "  - two:3",
        "e:",
      ].join("\n"),
    ) as YamlMap;
    expect(y).toEqual({
      a: { k: "1", j: "it's" },
      b: { k: "2", j: "it's" },
      c: ["p", "q"],
      d: ["one", "two:3"],
      e: null,
    });
    expect(() => readYaml("a: *nope")).toThrow(/Unresolved alias/);
    expect(() => readYaml("a: 1\na: 2")).toThrow(/keys must be unique/);
    // What a subset reader could not read, the yaml package reads as compose does.
    expect(readYaml("a: |\n  text")).toEqual({ a: "text\n" });
    expect(readYaml("a:\n  - k: v")).toEqual({ a: [{ k: "v" }] });
    expect(() => readYaml("a:\n    b: 1\n  c: 2")).toThrow(/indentation|unexpected|same column/);
  });

  it("interpolates as compose does", () => {
    expect(interpolate("${A:-x}/${B-y}/$$/${C}", { A: "", B: "" })).toBe("x//$/");
    expect(interpolate("${T:?set T}", { T: "v" })).toBe("v");
    expect(() => interpolate("${T:?set T (32+ chars)}", {})).toThrow(/required variable T: set T \(32\+ chars\)/);
  });
});

describe("docker-compose.yml", () => {
  const composeCli = dockerComposeAvailable();

  it(
    composeCli
      ? "docker compose config accepts it with INTERNAL_RPC_TOKEN set, and refuses it without"
      : "docker compose is not installed here: the whole file reads under the strict subset reader",
    () => {
      if (composeCli) {
        const ok = spawnSync("docker", ["compose", "-f", "docker-compose.yml", "config", "--quiet"], {
          cwd: ROOT,
          encoding: "utf8",
          env: { ...process.env, ...HOST_ENV },
          timeout: 60_000,
        });
        expect(ok.status, ok.stderr).toBe(0);
        const missing = spawnSync("docker", ["compose", "-f", "docker-compose.yml", "config", "--quiet"], {
          cwd: ROOT,
          encoding: "utf8",
          env: { ...process.env, INTERNAL_RPC_TOKEN: "" },
          timeout: 60_000,
        });
        expect(missing.status).not.toBe(0);
        expect(missing.stderr).toMatch(/INTERNAL_RPC_TOKEN/);
      } else {
        expect(Object.keys(doc).filter((k) => !k.startsWith("x-"))).toEqual(["name", "services", "volumes"]);
        expect(Object.keys(services).sort()).toEqual([
          "auth",
          "delivery",
          "gateway",
          "nats",
          "organisation",
          "postgres",
          "webhook",
        ]);
        // Every ${…} is either defaulted or one of the two required secrets, whose message says what to do.
        const refs = [...composeText.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}/g)].map((m) => ({
          name: m[1]!,
          op: m[2]!,
        }));
        expect(refs.length).toBeGreaterThan(0);
        for (const r of refs) {
          if (r.name === "INTERNAL_RPC_TOKEN") expect(r.op).toBe(":?set INTERNAL_RPC_TOKEN (32+ chars)");
          else if (r.name === "WEBHOOK_SECRET_ENCRYPTION_KEY")
            expect(r.op).toBe(":?set WEBHOOK_SECRET_ENCRYPTION_KEY (openssl rand -base64 32)");
          // The build's commit may be left out: /healthz then names none; so may the trace collector: no export.
          else if (r.name === "GIT_COMMIT" || r.name === "OTEL_EXPORTER_OTLP_ENDPOINT") expect(r.op).toBe(":-");
          else expect(r.op, r.name).toMatch(/^:-./);
        }
        for (const name of PLATFORM)
          expect(() => environment(name, {})).toThrow(/required variable INTERNAL_RPC_TOKEN/);
        // The webhook service alone needs the secrets' key.
        expect(() => environment("webhook", { INTERNAL_RPC_TOKEN: TOKEN })).toThrow(
          /required variable WEBHOOK_SECRET_ENCRYPTION_KEY/,
        );
        for (const name of PLATFORM.filter((n) => n !== "webhook"))
          expect(environment(name, { INTERNAL_RPC_TOKEN: TOKEN }).WEBHOOK_SECRET_ENCRYPTION_KEY, name).toBeUndefined();
      }
    },
  );

  it("runs postgres:16 and nats:2.10 with JetStream on a volume, each with a healthcheck", () => {
    const pgSvc = services.postgres!;
    expect(pgSvc.image).toBe("postgres:16");
    expect(environment("postgres")).toMatchObject({
      POSTGRES_USER: "postgres",
      POSTGRES_PASSWORD: "postgres",
      POSTGRES_DB: "bizcard",
    });
    expect(((pgSvc.healthcheck as YamlMap).test as string[]).join(" ")).toMatch(/pg_isready -U postgres -d bizcard/);
    expect(pgSvc.ports).toBeUndefined();

    const nats = services.nats!;
    expect(nats.image).toMatch(/^nats:2\.10(-|$)/);
    const cmd = nats.command as string[];
    expect(cmd).toContain("-js");
    expect(cmd[cmd.indexOf("-sd") + 1]).toBe("/data");
    const volume = (nats.volumes as string[]).find((v) => v.endsWith(":/data"));
    expect(volume).toBeDefined();
    expect(Object.keys(doc.volumes as YamlMap)).toContain(volume!.split(":")[0]);
    expect((nats.healthcheck as YamlMap).test).toBeInstanceOf(Array);
    expect(nats.ports).toBeUndefined();
  });

  it("builds every platform container from the Dockerfile and runs the compiled main.js of the right main.ts", () => {
    const build = JSON.parse(readFileSync(path.join(ROOT, "tsconfig.build.json"), "utf8")) as { include: string[] };
    for (const name of PLATFORM) {
      const svc = services[name]!;
      expect(svc.build, name).toEqual({
        context: ".",
        dockerfile: "Dockerfile",
        args: { GIT_COMMIT: "${GIT_COMMIT:-}" },
      });
      const main = name === "gateway" ? "gateway/main" : `services/${name}/main`;
      // tsc (outDir dist, rootDir .) compiles <main>.ts to dist/<main>.js; plain node runs it.
      // (With its V8 flags: scripts/platform-processes.ts GATEWAY_NODE_FLAGS, SERVICE_NODE_FLAGS.)
      expect(svc.command, name).toEqual([
        "node",
        ...(name === "gateway" ? GATEWAY_NODE_FLAGS : SERVICE_NODE_FLAGS),
        `dist/${main}.js`,
      ]);
      expect(existsSync(path.join(ROOT, `${main}.ts`)), main).toBe(true);
      expect(build.include, `tsconfig.build.json compiles ${main}.ts`).toContain(main.split("/")[0]);
    }
    // One image for all five: compose builds it once.
    expect(new Set(PLATFORM.map((n) => services[n]!.image)).size).toBe(1);
  });

  it("sets only variables that services/shared/config.ts reads, with values it accepts", () => {
    for (const name of PLATFORM) {
      const env = environment(name);
      const config = loadConfig(env); // throws ConfigError naming a bad value
      // zod keeps the keys it knows and drops the rest: an unknown (misspelt) variable disappears.
      // And the one tracing.ts reads (the OTLP endpoint; unset or empty: no export, tracesUrl).
      const known = [...Object.keys(config), "OTEL_EXPORTER_OTLP_ENDPOINT"];
      for (const key of Object.keys(env)) expect(known, `${name}: ${key} is not a config variable`).toContain(key);
      expect(tracesUrl(env)).toBeUndefined();
      expect(tracesUrl({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(
        "http://collector:4318/v1/traces",
      );
      expect(config.INTERNAL_RPC_TOKEN).toEqual([TOKEN]);
      expect(config.authRpcUrl).toBe("http://auth:7101");
      expect(config.organisationRpcUrl).toBe("http://organisation:7102");
      expect(config.webhookRpcUrl).toBe("http://webhook:7103");
      expect(config.deliveryRpcUrl).toBe("http://delivery:7104");
    }
  });

  it("gives each service the real backends, a listening address beyond loopback and its own port", () => {
    for (const name of Object.keys(SERVICES) as ServiceName[]) {
      const env = environment(name);
      const config = loadConfig(env);
      expect(() => requireBackends(config, { database: true, nats: true })).not.toThrow();
      expect(env.DATABASE_URL).toBe("postgres://postgres:postgres@postgres:5432/bizcard");
      expect(env.NATS_URL).toBe("nats://nats:4222");
      expect(env.RPC_HOST).toBe("0.0.0.0");
      expect(config.MIGRATE_ON_START).toBe(true);
      // The port it listens on is the one the others call it on, and the one its healthcheck probes.
      const portKey = `${name.toUpperCase()}_RPC_PORT` as "AUTH_RPC_PORT";
      expect(config[portKey], name).toBe(SERVICES[name]);
      const probe = ((services[name]!.healthcheck as YamlMap).test as string[]).join(" ");
      expect(probe).toContain(`http://127.0.0.1:${SERVICES[name]}/readyz`);
      expect(services[name]!.ports, `${name} must not publish ports`).toBeUndefined();
      expect(services[name]!.depends_on).toEqual({
        postgres: { condition: "service_healthy" },
        nats: { condition: "service_healthy" },
      });
    }
    // The same stream and subjects for everyone, or events go nowhere.
    const streams = new Set(
      (Object.keys(SERVICES) as ServiceName[]).map(
        (n) => `${environment(n).NATS_STREAM}/${environment(n).NATS_SUBJECT_PREFIX}`,
      ),
    );
    expect(streams.size).toBe(1);
  });

  it("publishes only the gateway, listening beyond loopback, once every service is healthy", () => {
    const gw = services.gateway!;
    const env = environment("gateway");
    const config = loadConfig(env);
    expect(config.GATEWAY_HOST).toBe("0.0.0.0");
    expect(config.publicUrl).toBe("http://localhost:8080");
    expect(env.DATABASE_URL, "the gateway needs no database credentials").toBeUndefined();
    const ports = gw.ports as string[];
    expect(ports).toHaveLength(1);
    expect(interpolate(ports[0]!, HOST_ENV)).toBe(`8080:${config.GATEWAY_PORT}`);
    expect(((gw.healthcheck as YamlMap).test as string[]).join(" ")).toContain(
      `http://127.0.0.1:${config.GATEWAY_PORT}/readyz`,
    );
    expect(gw.depends_on).toEqual(
      Object.fromEntries(Object.keys(SERVICES).map((n) => [n, { condition: "service_healthy" }])),
    );
    // Every service_healthy dependency has a healthcheck to become healthy by.
    for (const svc of Object.values(services)) {
      for (const dep of Object.keys((svc.depends_on as YamlMap | undefined) ?? {})) {
        expect(services[dep]?.healthcheck, `${dep} has no healthcheck`).toBeTypeOf("object");
      }
    }
  });
});
