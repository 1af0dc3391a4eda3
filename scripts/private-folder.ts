// A folder only its owner may read: DATA_DIR holds the embedded databases (whose WAL carries member
// emails and password hashes) and the local credentials. Folders 0700, files 0600, made so and repaired
// so at every start.
import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import path from "node:path";

export const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

/** Makes `dir` (missing parents too), every folder under it 0700 and every file 0600; symbolic links are left alone. */
export async function makePrivateFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const pending = [dir];
  while (pending.length > 0) {
    const folder = pending.pop()!;
    await setMode(folder, PRIVATE_DIR_MODE);
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const child = path.join(folder, entry.name);
      if (entry.isDirectory()) pending.push(child);
      else if (entry.isFile()) await setMode(child, PRIVATE_FILE_MODE);
    }
  }
}

async function setMode(file: string, mode: number): Promise<void> {
  const stats = await lstat(file);
  if ((stats.mode & 0o7777) !== mode) await chmod(file, mode);
}
