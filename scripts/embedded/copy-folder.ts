// A folder's copy with many files in flight at once. `fs.cp` copies one file after another, and creating
// a file is the cost on a small VM's ext4: with IN_FLIGHT copies at once (in libuv's threads), the waits
// of a PGlite cluster's hundreds of files overlap.
import { copyFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";

const IN_FLIGHT = 8;

/** Copies the folder `from` to `to` (which must not exist): folders made with `dirMode`, files keeping their modes. */
export async function copyFolder(from: string, to: string, dirMode = 0o700): Promise<void> {
  const files: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    await mkdir(path.join(to, rel), { mode: dirMode });
    for (const entry of await readdir(path.join(from, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) await walk(child);
      else if (entry.isFile()) files.push(child);
    }
  };
  await walk("");
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      await copyFile(path.join(from, file), path.join(to, file));
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, files.length) }, worker));
}
