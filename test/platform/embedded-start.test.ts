// `npm start` on the embedded default, as a newcomer runs it: no database or
// broker configured. Then the bizcard command against it, a restart on the
// same data folder, and a clean stop.
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EMBEDDED_DATABASE, migrationNames } from "../../scripts/service-schemas.js";
import { templateMigrations } from "../../scripts/embedded/embedded-templates.js";
import { ROOT, httpReady, platformPids, platformPorts, spawnProcess, type Spawned } from "../support/processes.js";

let dataDir: string;
let env: Record<string, string>;
let platform: Spawned | undefined;

async function stopGroup(p: Spawned): Promise<number | null> {
  if (p.child.exitCode === null) process.kill(-p.child.pid!, "SIGTERM");
  return p.exited;
}

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnProcess(process.execPath, [path.join(ROOT, "bin/bizcard.js"), ...args], env);
  let stdout = "";
  let stderr = "";
  p.child.stdout!.on("data", (d) => (stdout += d));
  p.child.stderr!.on("data", (d) => (stderr += d));
  return p.exited.then((code) => ({ code, stdout, stderr }));
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-start-"));
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
  if (platform) await stopGroup(platform);
  // The data folder holds the internal credential and 150 MB of PGlite data.
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Peak resident memory (VmHWM, MB) of npm start's platform process in the process group of `p`. */
function startPeakRssMb(p: Spawned): number {
  const peaks = platformPids(p).map((pid) =>
    Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/)![1]),
  );
  return Math.round(Math.max(...peaks) / 1024);
}

describe("npm start (embedded default)", () => {
  it("serves /readyz 200 with PGlite and the in-process bus, and prints the demo credentials once", async () => {
    platform = spawnProcess("npm", ["start", "--silent"], env);
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 150_000, platform);
    const res = await fetch(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: "ok",
      services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "ok" },
    });
    const out = platform.output();
    expect(out).toContain("PGlite");
    expect(out).toContain("in-process bus");
    expect(out).toContain(`gateway: http://127.0.0.1:${env.GATEWAY_PORT}`);
    expect(out).toMatch(/member login\s+demo@example\.com \/ \S+/);
    const demo = JSON.parse(readFileSync(path.join(dataDir, "demo-credentials.json"), "utf8"));
    expect(demo.client.client_id).toMatch(/^bc_/);
    expect(demo.client.client_secret).toMatch(/^bcs_/);
    expect(out).toContain(demo.client.client_secret);
    expect(existsSync(path.join(dataDir, "internal-rpc-token"))).toBe(true);
    // docs/architecture.md, "The embedded default", gives the figures: a copy of the install's migrated
    // template, about 0.35-0.4 GB (a guard with room for a machine busy with other suites); without
    // one (npm ci --ignore-scripts), initdb in a worker thread, about 0.9 GB.
    if (process.platform === "linux") {
      const peak = startPeakRssMb(platform);
      console.log(`[embedded-start] cold start peak RSS ${peak} MB`);
      const migrated = JSON.stringify(templateMigrations(EMBEDDED_DATABASE)) === JSON.stringify(migrationNames());
      expect(peak, "peak RSS (MB) of a cold start").toBeLessThan(migrated ? 600 : 1200);
    }
  }, 180_000);

  it("the bizcard command creates an organisation, contacts and a client against it", async () => {
    const org = await cli([
      "org",
      "create",
      "--name",
      "Acme Cards",
      "--email",
      "owner@acme.test",
      "--password",
      "correct horse",
      "--json",
    ]);
    expect(org.code).toBe(0);
    const orgJson = JSON.parse(org.stdout);
    expect(org.stdout.trim().split("\n")).toHaveLength(1);
    expect(orgJson).toEqual({
      organisation: { id: expect.any(String), name: "Acme Cards" },
      user: { id: expect.any(String), email: "owner@acme.test" },
    });

    const created = await cli([
      "contact",
      "create",
      "--org",
      orgJson.organisation.id,
      "--first-name",
      "Ada",
      "--last-name",
      "Lovelace",
      "--email",
      "ada@example.com",
      "--company",
      "Analytical Engines",
      "--json",
    ]);
    expect(created.code).toBe(0);
    const contact = JSON.parse(created.stdout);
    expect(contact).toMatchObject({
      first_name: "Ada",
      last_name: "Lovelace",
      email: "ada@example.com",
      company: "Analytical Engines",
    });
    expect(Object.keys(contact).sort()).toEqual([
      "address",
      "company",
      "created_at",
      "email",
      "first_name",
      "id",
      "job_title",
      "last_name",
      "notes",
      "phone",
      "updated_at",
      "website",
    ]);

    const updated = await cli([
      "contact",
      "update",
      "--org",
      orgJson.organisation.id,
      "--id",
      contact.id,
      "--job-title",
      "Analyst",
      "--json",
    ]);
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      id: contact.id,
      job_title: "Analyst",
      company: "Analytical Engines",
    });

    const confidential = await cli([
      "client",
      "create",
      "--name",
      "Zapier",
      "--redirect-uri",
      "https://zapier.com/dashboard/auth/oauth/return/App1/",
      "--json",
    ]);
    expect(confidential.code).toBe(0);
    const c = JSON.parse(confidential.stdout);
    expect(c).toEqual({
      client_id: expect.stringMatching(/^bc_/),
      client_secret: expect.stringMatching(/^bcs_/),
      name: "Zapier",
      redirect_uris: ["https://zapier.com/dashboard/auth/oauth/return/App1/"],
      scopes: ["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"],
    });
    const pub = await cli([
      "client",
      "create",
      "--name",
      "CLI app",
      "--redirect-uri",
      "http://127.0.0.1:5000/cb",
      "--public",
      "--scope",
      "organisation:read",
      "--json",
    ]);
    expect(pub.code).toBe(0);
    const p = JSON.parse(pub.stdout);
    expect(p).not.toHaveProperty("client_secret");
    expect(p.scopes).toEqual(["organisation:read"]);
    const owned = await cli([
      "client",
      "create",
      "--name",
      "Own CRM",
      "--owner-org",
      orgJson.organisation.id,
      "--json",
    ]);
    expect(owned.code).toBe(0);
  });

  it("a bad flag gets usage and exit 2; an RPC failure one line and exit 1", async () => {
    const bad = await cli(["org", "create", "--nmae", "x"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("usage:");
    expect(bad.stdout).toBe("");
    const missing = await cli(["contact", "create", "--first-name", "X"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing --org");
    const unknown = [
      "contact",
      "update",
      "--org",
      "00000000-0000-4000-8000-000000000001",
      "--id",
      "00000000-0000-4000-8000-000000000000",
      "--notes",
      "x",
    ];
    const failing = await cli(unknown);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toBe("");
    expect(failing.stderr.trim().split("\n")).toEqual(["bizcard: contact not found (not_found)"]);
    const failingJson = await cli([...unknown, "--json"]);
    expect(failingJson.code).toBe(1);
    expect(failingJson.stderr).toBe("");
    expect(JSON.parse(failingJson.stdout)).toEqual({ error: "not_found", error_description: "contact not found" });
    const http = await cli(["client", "create", "--name", "Bad", "--redirect-uri", "http://evil.example/cb"]);
    expect(http.code).toBe(1);
    expect(http.stderr).toMatch(/^bizcard: redirect_uri: must use https/);
  });

  it("stops cleanly on SIGTERM and keeps its data across a restart", async () => {
    const org = JSON.parse(
      (await cli(["org", "create", "--name", "Kept", "--email", "kept@x.test", "--password", "password-k", "--json"]))
        .stdout,
    );
    expect([0, null]).toContain(await stopGroup(platform!)); // npm itself may die of the signal
    expect(platform!.output()).toContain("bizcard platform stopped");
    platform = spawnProcess("npm", ["start", "--silent"], env);
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 150_000, platform);
    expect(platform.output()).not.toContain("member login");
    if (process.platform === "linux") {
      const peak = startPeakRssMb(platform);
      console.log(`[embedded-start] restart peak RSS ${peak} MB`);
      expect(peak, "peak RSS (MB) of a restart on an existing data folder").toBeLessThan(700);
    }
    const again = await cli(["contact", "create", "--org", org.organisation.id, "--last-name", "Survivor", "--json"]);
    expect(again.code).toBe(0);
    const dup = await cli(["org", "create", "--name", "Kept", "--email", "kept@x.test", "--password", "password-k"]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("already exists");
  }, 180_000);
});
