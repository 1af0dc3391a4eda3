// The bizcard command explains a failure a new operator can fix: a service it
// cannot reach (the URL it tried, and npm start), a credential that is missing
// or refused (where it looked: INTERNAL_RPC_TOKEN, DATA_DIR's token file).
// And GET /healthz answers the version and the git commit.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBuildInfo } from "../../gateway/build-info.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { freePort, ROOT, runBizcard } from "../support/processes.js";

const TOKEN = "e".repeat(40);
let platform: Platform;
let dataDir: string;

async function bizcard(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runBizcard(args, {
    ORGANISATION_RPC_URL: undefined,
    ORGANISATION_RPC_PORT: undefined,
    AUTH_RPC_URL: undefined,
    AUTH_RPC_PORT: undefined,
    INTERNAL_RPC_TOKEN: undefined,
    DATA_DIR: dataDir,
    ...env,
  });
}

const ORG = ["org", "create", "--name", "Explained", "--email", "x@explain.test", "--password", "password-explain"];

beforeAll(async () => {
  platform = await startPlatform({ token: TOKEN, auth: false, webhook: false, delivery: false, gateway: true });
  dataDir = mkdtempSync(path.join(tmpdir(), "bizcard-cli-explains-"));
}, 120_000);

afterAll(async () => {
  await platform?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("bizcard when it cannot reach a service", { timeout: 60_000 }, () => {
  it("names the URL it tried, from ORGANISATION_RPC_URL or the default port, and suggests npm start", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const run = await bizcard(ORG, { ORGANISATION_RPC_URL: url, INTERNAL_RPC_TOKEN: TOKEN });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(
        `^bizcard: cannot reach the organisation service at ${url} \\(.+\\); is the platform running\\? Start it with npm start, or set ORGANISATION_RPC_URL \\(unavailable\\)\\n$`,
      ),
    );
    const port = String(await freePort());
    const byPort = await bizcard([...ORG, "--json"], { ORGANISATION_RPC_PORT: port, INTERNAL_RPC_TOKEN: TOKEN });
    expect(byPort.code).toBe(1);
    const body = JSON.parse(byPort.stdout) as { error: string; error_description: string };
    expect(body.error).toBe("unavailable");
    expect(body.error_description).toContain(`cannot reach the organisation service at http://127.0.0.1:${port} (`);
    expect(body.error_description).toContain("Start it with npm start");
  });
});

describe("bizcard when the internal credential is missing or refused", { timeout: 60_000 }, () => {
  const url = () => platform.organisation.server.url;
  const file = () => path.join(dataDir, "internal-rpc-token");

  it("says it looked in INTERNAL_RPC_TOKEN and DATA_DIR's file when it found none", async () => {
    rmSync(file(), { force: true });
    const run = await bizcard(ORG, { ORGANISATION_RPC_URL: url() });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `bizcard: no internal credential: INTERNAL_RPC_TOKEN is unset and ${file()} does not exist (set INTERNAL_RPC_TOKEN, or DATA_DIR to the folder npm start uses) (unauthenticated)\n`,
    );
  });

  it("names INTERNAL_RPC_TOKEN, or the file it read, when the service refuses the credential", async () => {
    const fromEnv = await bizcard(ORG, { ORGANISATION_RPC_URL: url(), INTERNAL_RPC_TOKEN: "w".repeat(40) });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.stderr).toBe(
      `bizcard: the organisation service at ${url()} refused the internal credential from INTERNAL_RPC_TOKEN: it must be one the platform was started with (unauthenticated)\n`,
    );
    writeFileSync(file(), `${"f".repeat(40)}\n`);
    const fromFile = await bizcard(ORG, { ORGANISATION_RPC_URL: url() });
    expect(fromFile.stderr).toBe(
      `bizcard: the organisation service at ${url()} refused the internal credential from ${file()} (DATA_DIR; INTERNAL_RPC_TOKEN is unset): it must be one the platform was started with (unauthenticated)\n`,
    );
    // The right credential in that file goes through.
    writeFileSync(file(), `${TOKEN}\n`);
    const ok = await bizcard([...ORG, "--json"], { ORGANISATION_RPC_URL: url() });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ organisation: { name: "Explained" } });
  });
});

describe("GET /healthz", () => {
  it("answers the version of package.json and the commit checked out", async () => {
    const version = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version;
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const res = await fetch(`${platform.base}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "ok", version, commit });
  });

  it("takes the commit from GIT_COMMIT where the deployment sets it, and leaves it out where none is known", () => {
    expect(readBuildInfo({ GIT_COMMIT: "0123abcd" })).toMatchObject({ commit: "0123abcd" });
    // An image's dist/ with package.json beside it and no .git: the version alone.
    const app = mkdtempSync(path.join(tmpdir(), "bizcard-image-"));
    try {
      writeFileSync(
        path.join(app, "package.json"),
        JSON.stringify({ name: "bizcard-oauth-platform", version: "9.8.7" }),
      );
      expect(readBuildInfo({}, path.join(app, "dist", "gateway"))).toEqual({ version: "9.8.7" });
      expect(readBuildInfo({ GIT_COMMIT: "not a commit" }, path.join(app, "dist", "gateway"))).toEqual({
        version: "9.8.7",
      });
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  });
});
