// A private PostgreSQL server on a free port, from this machine's binaries:
// for test files that need several database sessions at once (row locks,
// advisory locks, a transaction held open while another commits) when the
// shared PostgreSQL cannot be reached. PGlite, the embedded fallback, is a
// single-session database and cannot show those. Its data lives in a
// temporary folder that stop() removes.
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort, spawnProcess, waitFor, type Spawned } from "./processes.js";

/** The newest installed server's bin folder (Debian layout), or PG_BIN_DIR. */
function binDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) {
    throw new Error(
      "no PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin, or PG_BIN_DIR): this test needs several database sessions, which PGlite cannot give",
    );
  }
  return path.join(root, versions[0]!, "bin");
}

/** PostgreSQL refuses to run as root: as root, the server runs as the postgres user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  return { uid, gid };
}

export class PostgresServer {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private proc: Spawned | undefined,
    private readonly bin: string,
    private readonly user: { uid: number; gid: number } | undefined,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async start(): Promise<PostgresServer> {
    const bin = binDir();
    const user = runAs();
    const dir = await mkdtemp(path.join(tmpdir(), "bizcard-postgres-"));
    try {
      if (user) chownSync(dir, user.uid, user.gid);
      const data = path.join(dir, "data");
      execFileSync(path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"], {
        stdio: "ignore",
        ...user,
      });
      const server = new PostgresServer(await freePort(), dir, undefined, bin, user);
      await server.restart();
      return server;
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** Starts the server again on the same port and data (after halt()). */
  async restart(): Promise<void> {
    const proc = spawnProcess(
      path.join(this.bin, "postgres"),
      [
        "-D",
        path.join(this.dir, "data"),
        "-p",
        String(this.port),
        "-k",
        this.dir,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "fsync=off",
      ],
      {},
      this.dir,
      this.user,
    );
    this.proc = proc;
    // Ready when a session runs a statement: the port accepts connections a
    // moment before the server does ("the database system is starting up").
    await waitFor(
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`postgres exited:\n${proc.output()}`);
        const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 2_000 });
        c.on("error", () => {});
        try {
          await c.connect();
          await c.query("select 1");
          return true;
        } catch {
          return undefined;
        } finally {
          await c.end().catch(() => {});
        }
      },
      20_000,
      "private postgres",
    );
  }

  /** Stops the server (fast shutdown: sessions are cut), keeping its data for restart(). */
  async halt(): Promise<void> {
    await this.proc?.kill("SIGINT");
    this.proc = undefined;
  }

  async stop(): Promise<void> {
    await this.halt();
    await rm(this.dir, { recursive: true, force: true });
  }
}
