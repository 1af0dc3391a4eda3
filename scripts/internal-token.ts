// The per-data-folder internal credential of a local start (npm start,
// npm run start:distributed): made once, kept in DATA_DIR, read by bizcard.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

export const INTERNAL_TOKEN_FILE = "internal-rpc-token";

/** The credential in `dataDir`, made (owner-only) on first use, so that even loopback callers must present it. */
export async function internalToken(dataDir: string): Promise<string> {
  const file = path.join(dataDir, INTERNAL_TOKEN_FILE);
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const token = randomBytes(32).toString("base64url");
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return token;
}
