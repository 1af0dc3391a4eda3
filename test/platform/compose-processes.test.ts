// docker-compose.yml against what each platform process requires when it runs
// on its own: the variables come from services/shared/config.ts's own start
// checks (SERVICE_PROCESS_CHECKS, WEBHOOK_PROCESS_CHECKS, GATEWAY_PROCESS_CHECKS), found one at a time
// from an empty environment; the gateway gets the services' bus (else its
// bearer cache is silently off); and each container runs the entry point that
// `npm run start:distributed` runs (scripts/platform-processes.ts).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  GATEWAY_NODE_FLAGS,
  PLATFORM_ENV,
  PLATFORM_PROCESSES,
  compiledCommand,
  composeCommand,
  startCommand,
} from "../../scripts/platform-processes.js";
import {
  ConfigError,
  GATEWAY_PROCESS_CHECKS,
  SERVICE_PROCESS_CHECKS,
  WEBHOOK_PROCESS_CHECKS,
  loadConfig,
  type Config,
} from "../../services/shared/config.js";
import { ROOT } from "../support/processes.js";

const HOST_ENV: Record<string, string> = {
  INTERNAL_RPC_TOKEN: "compose-processes-token-0123456789abcdef",
  WEBHOOK_SECRET_ENCRYPTION_KEY: Buffer.alloc(32, "compose-processes-key").toString("base64"),
};
const compose = parse(readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8"), { merge: true }) as {
  services: Record<string, { command?: string[]; environment?: Record<string, unknown> }>;
};

/** ${VAR}, ${VAR:-default}, ${VAR:?message} as compose fills them from the host's HOST_ENV. */
function environment(service: string): Record<string, string> {
  const env = compose.services[service]?.environment ?? {};
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => [
      k,
      String(v).replace(
        /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-?])([^}]*))?\}/g,
        (_, name: string, op?: string, arg?: string) => HOST_ENV[name] ?? (op === "-" ? arg! : ""),
      ),
    ]),
  );
}

/** The variables `checks` require: start from nothing, add what each ConfigError names, until they pass. */
function requiredVariables(
  checks: ((c: Config) => void)[],
  source: Record<string, string>,
): { required: string[]; unmet: string[] } {
  const env: Record<string, string> = {};
  const required: string[] = [];
  const unmet: string[] = [];
  for (let round = 0; round < 20; round++) {
    try {
      const config = loadConfig(env);
      for (const check of checks) check(config);
      return { required, unmet };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      required.push(err.variable);
      if (source[err.variable] === undefined) {
        unmet.push(err.variable);
        return { required, unmet };
      }
      env[err.variable] = source[err.variable]!;
    }
  }
  throw new Error("the checks never passed");
}

describe("docker-compose.yml and each process's own requirements", () => {
  it("sets, for every service and the gateway, each variable its start checks require", () => {
    for (const proc of PLATFORM_PROCESSES) {
      const checks =
        proc.name === "gateway"
          ? GATEWAY_PROCESS_CHECKS
          : proc.name === "webhook"
            ? WEBHOOK_PROCESS_CHECKS
            : SERVICE_PROCESS_CHECKS;
      const env = environment(proc.name);
      const { required, unmet } = requiredVariables(checks, env);
      expect(unmet, `${proc.name} lacks ${unmet.join(", ")}`).toEqual([]);
      const service = ["DATABASE_URL", "INTERNAL_RPC_TOKEN", "NATS_URL"];
      expect(required.sort(), proc.name).toEqual(
        proc.name === "gateway"
          ? ["INTERNAL_RPC_TOKEN"]
          : proc.name === "webhook"
            ? [...service, "WEBHOOK_SECRET_ENCRYPTION_KEY"]
            : service,
      );
      // And with everything compose sets, the process starts its checks clean.
      const config = loadConfig(env);
      for (const check of checks) expect(() => check(config), proc.name).not.toThrow();
    }
  });

  it("gives the gateway the services' bus, so that it hears revocations and caches bearer checks", () => {
    const gateway = environment("gateway");
    for (const name of ["auth", "organisation", "webhook", "delivery"]) {
      const service = environment(name);
      for (const key of ["NATS_URL", "NATS_STREAM", "NATS_SUBJECT_PREFIX"])
        expect(gateway[key], `gateway ${key} (as ${name}'s)`).toBe(service[key]);
    }
    expect(loadConfig(gateway).NATS_URL).toBe("nats://nats:4222");
  });

  it("runs in each container the entry point npm run start:distributed runs, compiled", () => {
    const platform = Object.entries(compose.services).filter(([, s]) => s.command?.at(-1)?.startsWith("dist/"));
    expect(platform.map(([name]) => name).sort()).toEqual(PLATFORM_PROCESSES.map((p) => p.name).sort());
    for (const proc of PLATFORM_PROCESSES) {
      expect(compose.services[proc.name]!.command, proc.name).toEqual(composeCommand(proc));
      expect(compiledCommand(proc, "/build").at(-1), proc.name).toBe(
        composeCommand(proc)
          .at(-1)!
          .replace(/^dist\//, "/build/"),
      );
    }
  });

  it("runs the gateway with its V8 flags everywhere: compose, the image's default command and npm start", () => {
    const gateway = PLATFORM_PROCESSES.find((p) => p.name === "gateway")!;
    expect(gateway.nodeFlags).toEqual(GATEWAY_NODE_FLAGS);
    expect(compose.services.gateway!.command).toEqual(["node", ...GATEWAY_NODE_FLAGS, "dist/gateway/main.js"]);
    // start:distributed --compiled <folder>: the same, from another build folder.
    expect(compiledCommand(gateway, ".bench-build-x/")).toEqual([
      "node",
      ...GATEWAY_NODE_FLAGS,
      ".bench-build-x/gateway/main.js",
    ]);
    const cmd = readFileSync(path.join(ROOT, "Dockerfile"), "utf8")
      .split("\n")
      .find((l) => l.startsWith("CMD "))!;
    expect(JSON.parse(cmd.slice(4))).toEqual(composeCommand(gateway));
    const scripts = (
      JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.start).toBe(`exec ${startCommand().join(" ")}`);
  });

  it("starts every process with the platform's environment: npm start's script and the image's runtime stage", () => {
    const settings = Object.entries(PLATFORM_ENV).map(([k, v]) => `${k}=${v}`);
    expect(settings).toEqual(["MALLOC_MMAP_THRESHOLD_=1048576"]);
    const scripts = (
      JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }
    ).scripts;
    expect(scripts.start!.startsWith(`exec env ${settings.join(" ")} node `)).toBe(true);
    const dockerfile = readFileSync(path.join(ROOT, "Dockerfile"), "utf8");
    const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
    for (const setting of settings) expect(runtime).toContain(setting);
  });
});

describe("the Dockerfile's installs", () => {
  it("copy package.json's postinstall scripts before each npm ci that runs scripts (it would fail to start without them)", () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const scripts = (manifest.scripts.postinstall ?? "").split(" && ").map((step) => /^node (\S+)$/.exec(step)?.[1]);
    expect(scripts).toEqual(["scripts/pglite-template.mjs", "scripts/run-compiled.mjs"]);
    // run-compiled.mjs imports compile-sources.mjs.
    const copiedBeforeInstall = [...scripts, "scripts/compile-sources.mjs"];
    const lines = readFileSync(path.join(ROOT, "Dockerfile"), "utf8").split("\n");
    const installs = lines.flatMap((line, i) => (/^RUN npm ci\b/.test(line) ? [i] : []));
    expect(installs).toHaveLength(2);
    // The build stage runs it; the runtime stage runs no install script at all.
    expect(lines[installs[1]!]).toContain("--ignore-scripts");
    for (const at of installs.filter((i) => !lines[i]!.includes("--ignore-scripts"))) {
      // Since the stage's FROM, a COPY of the script.
      const stage = lines.slice(0, at).findLastIndex((l) => l.startsWith("FROM "));
      for (const script of copiedBeforeInstall) {
        expect(
          lines.slice(stage, at).some((l) => l.startsWith("COPY ") && l.includes(script!)),
          `${script} before ${lines[at]}`,
        ).toBe(true);
      }
    }
  });
});
