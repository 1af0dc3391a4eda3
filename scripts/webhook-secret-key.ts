// The per-data-folder key of a local start (npm start, npm run
// start:distributed) that the webhook signing secrets are encrypted with when
// WEBHOOK_SECRET_ENCRYPTION_KEY is unset: made once, kept in DATA_DIR beside
// the internal credential. Losing it loses every subscription's secret.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { ConfigError } from "../services/shared/config.js";

export const WEBHOOK_SECRET_KEY_FILE = "webhook-secret-encryption-key";

/** The key in `dataDir` as WEBHOOK_SECRET_ENCRYPTION_KEY spells it (base64 of 32 bytes), made (owner-only) on first use. */
export async function webhookSecretKey(dataDir: string): Promise<string> {
  const file = path.join(dataDir, WEBHOOK_SECRET_KEY_FILE);
  if (existsSync(file)) {
    const key = (await readFile(file, "utf8")).trim();
    if (Buffer.from(key, "base64").length !== 32) {
      throw new ConfigError(
        "WEBHOOK_SECRET_ENCRYPTION_KEY",
        `unset, and ${file} does not hold a key (base64 of 32 bytes): restore that file, or set the variable`,
      );
    }
    return key;
  }
  const key = randomBytes(32).toString("base64");
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}
