// The production image runs compiled JavaScript on production dependencies
// only (Dockerfile: `npm run build` in a build stage, `npm ci --omit=dev` and
// dist/ in the runtime stage). Without a Docker engine, this proves the same:
// `npm run build` compiles every folder the commands run from, the output
// imports no TypeScript, and the compiled organisation service, run by plain
// node without tsx and with every dev-only package refused at resolution,
// becomes ready against PostgreSQL and NATS, serves the compiled bizcard
// command, and drains on SIGTERM.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backendMode, createTestDatabase, TEST_NATS_URL, uniqueName, type TestDatabase } from "../support/backends.js";
import { NatsServer, ROOT, freePort, httpReady, spawnProcess, type Spawned } from "../support/processes.js";
import { deleteStream } from "../support/stream.js";

// Inside the project, so that the compiled files resolve node_modules as
// /app/dist does in the image; never dist/ itself, which bin/bizcard.js would
// pick up in the other test files running meanwhile.
let out: string;
let build: Spawned;
let db: TestDatabase | undefined;
let privateNats: NatsServer | undefined;
let natsUrl: string;
let service: Spawned | undefined;
const stream = uniqueName("T_");
const token = randomBytes(32).toString("base64url");

/** Packages `npm ci --omit=dev` leaves out: package-lock.json marks them "dev": true. */
function devOnlyPackages(): string[] {
  const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  return Object.entries(lock.packages)
    .filter(([p, info]) => p.startsWith("node_modules/") && info.dev === true)
    .map(([p]) => p);
}

/** node with no loader but the hooks that refuse TypeScript and dev-only packages. */
function productionNode(args: string[], env: Record<string, string | undefined>): Spawned {
  const hooks = pathToFileURL(path.join(ROOT, "test/support/production-only-hooks.mjs")).href;
  const data = { root: ROOT, devOnly: devOnlyPackages() };
  const register = `import { register } from "node:module"; register(${JSON.stringify(hooks)}, { data: ${JSON.stringify(data)} });`;
  return spawnProcess(process.execPath, [`--import=data:text/javascript,${encodeURIComponent(register)}`, ...args], {
    NODE_OPTIONS: "",
    ...env,
  });
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = path.join(dir, e);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

beforeAll(async () => {
  out = await mkdtemp(path.join(ROOT, ".test-build-"));
  build = spawnProcess("npm", ["run", "--silent", "build", "--", "--outDir", out], {});
  await build.exited;
}, 240_000);

afterAll(async () => {
  if (service && service.child.exitCode === null && service.child.signalCode === null) await service.kill("SIGKILL");
  if (privateNats) await privateNats.stop();
  else if (natsUrl) await deleteStream(natsUrl, stream).catch(() => undefined);
  await db?.drop();
  await rm(out, { recursive: true, force: true });
}, 60_000);

describe("the production build", () => {
  it("npm run build compiles gen, services, gateway, bin and scripts, migrations included, with no TypeScript imports left", () => {
    expect(build.child.exitCode, build.output()).toBe(0);
    for (const main of [
      "gateway/main.js",
      "bin/bizcard-cli.js",
      "scripts/start.js",
      ...["auth", "organisation", "webhook", "delivery"].map((s) => `services/${s}/main.js`),
    ]) {
      expect(existsSync(path.join(out, main)), main).toBe(true);
    }
    for (const svc of ["auth", "organisation", "webhook", "delivery"]) {
      const migrations = readdirSync(path.join(ROOT, "services", svc, "migrations")).filter((f) => f.endsWith(".ts"));
      expect(migrations.length, svc).toBeGreaterThan(0);
      for (const m of migrations)
        expect(
          existsSync(path.join(out, "services", svc, "migrations", m.replace(/\.ts$/, ".js"))),
          `${svc}/${m}`,
        ).toBe(true);
    }
    const js = files(out).filter((f) => f.endsWith(".js"));
    const tsImports = js.flatMap((f) =>
      [...readFileSync(f, "utf8").matchAll(/(?:from\s*|import\s*\(\s*)["']([^"']+\.[cm]?ts)["']/g)].map(
        (m) => `${path.relative(out, f)}: ${m[1]}`,
      ),
    );
    expect(tsImports).toEqual([]);
    expect(files(out).filter((f) => /\.[cm]?ts$/.test(f) && !f.endsWith(".d.ts"))).toEqual([]);
  });

  it("runs the compiled organisation service with plain node, production dependencies only, to /readyz and a clean stop", {
    timeout: 180_000,
  }, async () => {
    expect(build.child.exitCode, "the build failed").toBe(0);
    db = await createTestDatabase();
    if (backendMode().nats) natsUrl = TEST_NATS_URL;
    else {
      privateNats = await NatsServer.start();
      natsUrl = privateNats.url;
    }
    const port = await freePort();
    const env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_MAX: String(db.poolMax),
      NATS_URL: natsUrl,
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: uniqueName("t"),
      INTERNAL_RPC_TOKEN: token,
      ORGANISATION_RPC_PORT: String(port),
      ORGANISATION_RPC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: "info",
      DATA_DIR: undefined,
    };
    service = productionNode([path.join(out, "services/organisation/main.js")], env);
    await httpReady(`http://127.0.0.1:${port}/readyz`, 120_000, service);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(await ready.json()).toEqual({ status: "ok", checks: { database: "ok", bus: "ok" } });

    // The compiled bizcard command, under the same hooks, against it.
    const email = `${uniqueName("prod")}@build.test`;
    const cli = productionNode(
      [
        path.join(out, "bin/bizcard-cli.js"),
        "org",
        "create",
        "--name",
        "Compiled",
        "--email",
        email,
        "--password",
        "compiled password",
        "--json",
      ],
      env,
    );
    const code = await cli.exited;
    expect(code, cli.output()).toBe(0);
    expect(JSON.parse(cli.output())).toMatchObject({ organisation: { name: "Compiled" }, user: { email } });

    expect(await service.kill("SIGTERM"), service.output()).toBe(0);
    expect(service.output()).toMatch(/"msg":"stopped"/);
  });

  it("the hooks refuse what the image does not have: tsx and TypeScript sources", async () => {
    const viaTsx = productionNode(["--import", "tsx", "-e", "1"], {});
    expect(await viaTsx.exited).not.toBe(0);
    expect(viaTsx.output()).toMatch(/dev dependency: tsx/);
    const source = productionNode([path.join(ROOT, "services/organisation/main.ts")], {});
    expect(await source.exited).not.toBe(0);
    expect(source.output()).toMatch(/production run imports TypeScript/);
  });
});
