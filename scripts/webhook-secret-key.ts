// The key the webhook signing secrets are encrypted with when WEBHOOK_SECRET_ENCRYPTION_KEY is unset,
// kept in DATA_DIR beside the internal credential (internal-token.ts). Losing it loses every
// subscription's secret.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { ConfigError } from "../services/shared/config.js";
import { dataFolderSecret } from "./internal-token.js";

export const WEBHOOK_SECRET_KEY_FILE = "webhook-secret-encryption-key";

/** The key in `dataDir` as WEBHOOK_SECRET_ENCRYPTION_KEY spells it (base64 of 32 bytes), made on first use. */
export async function webhookSecretKey(dataDir: string): Promise<string> {
  const key = await dataFolderSecret(dataDir, WEBHOOK_SECRET_KEY_FILE, () => randomBytes(32).toString("base64"));
  if (Buffer.from(key, "base64").length === 32) return key;
  throw new ConfigError(
    "WEBHOOK_SECRET_ENCRYPTION_KEY",
    `unset, and ${path.join(dataDir, WEBHOOK_SECRET_KEY_FILE)} does not hold a key (base64 of 32 bytes): restore that file, or set the variable`,
  );
}
