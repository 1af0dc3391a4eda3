// The webhook service as its own process (services/webhook/main.ts) needs
// WEBHOOK_SECRET_ENCRYPTION_KEY: without it, or with a malformed one, it exits
// 1 with one line naming the variable, before it touches any backend, and
// never echoes a key. (What the configuration accepts: test/unit/secret-key-config.test.ts.)
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../services/shared/config.js";
import { freePort, spawnTs } from "../support/processes.js";

/** Every variable the configuration reads, unset: the child sees only what a test gives it. */
const CLEAN_ENV: Record<string, undefined> = Object.fromEntries(
  Object.keys(loadConfig({}))
    .filter((k) => /^[A-Z][A-Z0-9_]*$/.test(k))
    .map((k) => [k, undefined]),
);

/** Backends nobody listens on: a process that got as far as using them would fail differently. */
const UNREACHABLE = {
  DATABASE_URL: "postgres://postgres@127.0.0.1:1/none",
  NATS_URL: "nats://127.0.0.1:1",
  INTERNAL_RPC_TOKEN: "w".repeat(40),
};

async function runWebhook(
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; output: string }> {
  const p = spawnTs("services/webhook/main.ts", {
    ...CLEAN_ENV,
    ...UNREACHABLE,
    WEBHOOK_RPC_PORT: String(await freePort()),
    ...env,
  });
  let stderr = "";
  p.child.stderr!.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => p.child.kill("SIGKILL"), 30_000);
  const code = await p.exited;
  clearTimeout(timer);
  return { code, stderr, output: p.output() };
}

describe("the webhook process's WEBHOOK_SECRET_ENCRYPTION_KEY", () => {
  it("unset: exit 1, one line naming it and saying how to make one", async () => {
    const run = await runWebhook({});
    expect(run.code, run.output).toBe(1);
    expect(run.stderr).toBe(
      "configuration error: WEBHOOK_SECRET_ENCRYPTION_KEY: required: the key the webhook signing secrets are encrypted with, base64 of 32 random bytes (openssl rand -base64 32) (unset)\n",
    );
    expect(run.output).not.toMatch(/listening|migrat/i);
  });

  it("a key of 16 bytes after a good one: exit 1, one line naming it and the entry, echoing neither", async () => {
    const [good, short] = [randomBytes(32).toString("base64"), randomBytes(16).toString("base64")];
    const run = await runWebhook({ WEBHOOK_SECRET_ENCRYPTION_KEY: `${good},${short}` });
    expect(run.code, run.output).toBe(1);
    expect(run.stderr).toBe(
      "configuration error: WEBHOOK_SECRET_ENCRYPTION_KEY: key 2 of 2 decodes to 16 bytes: expected base64 of 32 random bytes each (openssl rand -base64 32), comma-separated\n",
    );
    expect(run.output).not.toContain(good);
    expect(run.output).not.toContain(short);
  });
});
