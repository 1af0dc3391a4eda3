// WEBHOOK_SECRET_ENCRYPTION_KEY: what the configuration accepts (base64 or
// base64url of 32 bytes, a comma-separated list, first one current) and what
// it refuses, naming the variable and never echoing a key; the webhook
// process's start checks require it; the local starts' key file
// (scripts/webhook-secret-key.ts) is made once, owner-only, and reused.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { WEBHOOK_SECRET_KEY_FILE, webhookSecretKey } from "../../scripts/webhook-secret-key.js";
import {
  ConfigError,
  SERVICE_PROCESS_CHECKS,
  WEBHOOK_PROCESS_CHECKS,
  loadConfig,
} from "../../services/shared/config.js";

const VARIABLE = "WEBHOOK_SECRET_ENCRYPTION_KEY";
const READY = { DATABASE_URL: "postgres://db/x", NATS_URL: "nats://bus:4222", INTERNAL_RPC_TOKEN: "t".repeat(40) };

function refusal(env: Record<string, string>): ConfigError {
  let caught: unknown;
  try {
    loadConfig(env);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ConfigError);
  return caught as ConfigError;
}

describe("WEBHOOK_SECRET_ENCRYPTION_KEY", () => {
  it("reads base64 and base64url keys, padded or not, as a list in order; unset or blank is none", () => {
    const [a, b] = [randomBytes(32), randomBytes(32)];
    expect(loadConfig({ [VARIABLE]: a.toString("base64") })[VARIABLE]).toEqual([a]);
    expect(
      loadConfig({ [VARIABLE]: ` ${b.toString("base64url")} , ${a.toString("base64").replace(/=+$/, "")}` })[VARIABLE],
    ).toEqual([b, a]);
    expect(loadConfig({})[VARIABLE]).toEqual([]);
    expect(loadConfig({ [VARIABLE]: "  " })[VARIABLE]).toEqual([]);
  });

  it.each([
    ["a key of 16 bytes", randomBytes(16).toString("base64"), "key 1 of 1 decodes to 16 bytes"],
    ["a key of 33 bytes", randomBytes(33).toString("base64"), "key 1 of 1 decodes to 33 bytes"],
    ["a passphrase", "correct horse battery staple, twice!", "key 1 of 2 is not base64"],
    ["hex of 32 bytes", randomBytes(32).toString("hex"), "key 1 of 1 decodes to 48 bytes"],
    ["a good key and an empty entry", `${randomBytes(32).toString("base64")},`, "key 2 of 2 is not base64"],
    [
      "a good key and a short one",
      `${randomBytes(32).toString("base64")},${randomBytes(31).toString("base64")}`,
      "key 2 of 2 decodes to 31 bytes",
    ],
  ])("refuses %s naming the variable and the entry, never echoing it", (_, value, problem) => {
    const err = refusal({ [VARIABLE]: value });
    expect(err.variable).toBe(VARIABLE);
    expect(err.message).toBe(
      `${VARIABLE}: ${problem}: expected base64 of 32 random bytes each (openssl rand -base64 32), comma-separated`,
    );
    for (const entry of value.split(",").filter((e) => e.length > 4)) expect(err.message).not.toContain(entry.trim());
  });

  it("is required by the webhook process's start checks, and by no other service's", () => {
    const config = loadConfig(READY);
    for (const check of SERVICE_PROCESS_CHECKS) expect(() => check(config)).not.toThrow();
    const failing = WEBHOOK_PROCESS_CHECKS.map((check) => {
      try {
        check(config);
        return undefined;
      } catch (err) {
        return err;
      }
    }).filter(Boolean);
    expect(failing).toHaveLength(1);
    expect(failing[0]).toBeInstanceOf(ConfigError);
    expect((failing[0] as ConfigError).message).toBe(
      `${VARIABLE}: required: the key the webhook signing secrets are encrypted with, base64 of 32 random bytes (openssl rand -base64 32) (unset)`,
    );
    const keyed = loadConfig({ ...READY, [VARIABLE]: randomBytes(32).toString("base64") });
    for (const check of WEBHOOK_PROCESS_CHECKS) expect(() => check(keyed)).not.toThrow();
  });
});

describe("the local starts' key file", () => {
  it("is made once in the data folder, owner-only, a key the configuration accepts, and reused; a damaged one is refused", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "bizcard-secret-key-"));
    try {
      const first = await webhookSecretKey(dir);
      const file = path.join(dir, WEBHOOK_SECRET_KEY_FILE);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(await readFile(file, "utf8")).toBe(`${first}\n`);
      expect(loadConfig({ [VARIABLE]: first })[VARIABLE]).toEqual([Buffer.from(first, "base64")]);
      expect(await webhookSecretKey(dir)).toBe(first);

      await writeFile(file, "not a key\n");
      const err = await webhookSecretKey(dir).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toBe(
        `${VARIABLE}: unset, and ${file} does not hold a key (base64 of 32 bytes): restore that file, or set the variable`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
