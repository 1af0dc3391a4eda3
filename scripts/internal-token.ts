// The per-data-folder secrets of a local start (npm start, npm run start:distributed) whose variables
// are unset, each made once, owner-only, and kept in DATA_DIR; here, the internal credential.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

export const INTERNAL_TOKEN_FILE = "internal-rpc-token";

/** The secret in `dataDir`'s file `name`, made by `make` (owner-only) on first use. */
export async function dataFolderSecret(dataDir: string, name: string, make: () => string): Promise<string> {
  const file = path.join(dataDir, name);
  if (existsSync(file)) return (await readFile(file, "utf8")).trim();
  const secret = make();
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/** The internal credential in `dataDir`, so that even loopback callers must present it. */
export const internalToken = (dataDir: string): Promise<string> =>
  dataFolderSecret(dataDir, INTERNAL_TOKEN_FILE, () => randomBytes(32).toString("base64url"));
