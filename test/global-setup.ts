// Decides once per run which backends the suites use, and says so; and makes
// sure a run leaves no temporary folders behind.
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ADMIN_DATABASE_URL, TEST_NATS_URL } from "./support/backends.js";

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: 1500 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Every temporary folder of this run (the tests', and their child processes')
 * is made under one folder of its own: os.tmpdir() reads TMPDIR, which the
 * test workers and their children inherit. At the end, any bizcard-* folder
 * still in it is a test that did not remove what it made (PGlite data with
 * the internal credential, nats-server stores): the run fails, naming them,
 * and the folder is removed either way. Runs of other checkouts at the same
 * time have folders of their own.
 */
function isolateTempDir(): () => void {
  const runDir = mkdtempSync(path.join(tmpdir(), "bizcard-test-run-"));
  // Traversable, not listable: a private PostgreSQL server (support/postgres-server.ts) runs as
  // the postgres user and must reach its data folder inside.
  chmodSync(runDir, 0o711);
  process.env.TMPDIR = runDir;
  return () => {
    const left = readdirSync(runDir).filter((e) => e.startsWith("bizcard-"));
    rmSync(runDir, { recursive: true, force: true });
    if (left.length > 0) {
      throw new Error(
        `the tests left ${left.length} temporary folder(s) behind (removed now): ${left.sort().join(", ")}`,
      );
    }
  };
}

export default async function setup(): Promise<() => void> {
  const teardown = isolateTempDir();
  const postgres = await reachable(ADMIN_DATABASE_URL, 5432);
  const nats = await reachable(TEST_NATS_URL, 4222);
  process.env.BIZCARD_TEST_POSTGRES = postgres ? "real" : "embedded";
  process.env.BIZCARD_TEST_NATS = nats ? "real" : "embedded";
  const say = (what: string, real: boolean, where: string, fallback: string) =>
    real ? `${what}: real (${where})` : `${what}: NOT REACHABLE at ${where}; using the embedded ${fallback}`;
  process.stdout.write(
    `\n[backends] ${say("PostgreSQL", postgres, new URL(ADMIN_DATABASE_URL).host, "PGlite")}; ${say("NATS", nats, new URL(TEST_NATS_URL).host, "in-process bus")}\n\n`,
  );
  return teardown;
}
