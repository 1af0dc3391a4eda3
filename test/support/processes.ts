// Child processes for tests that run services as their own processes, kill
// them, or restart a broker: the services' real main.ts, a private
// nats-server on a free port (never the shared one).
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../..");
const NATS_SERVER_BIN =
  process.env.NATS_SERVER_BIN ?? (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server");

// Below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by
// default): a port asked of the kernel with listen(0) comes from that range,
// and between the moment it is released here and the moment a child process
// binds it, an outgoing connection anywhere on the machine (the suite makes
// thousands) may take it as its local port. Ports in this range are only
// ever taken by a listen, so a random pick that binds now stays free unless
// another test picks the very same one.
//
// Each vitest worker picks from its own slice of the range (VITEST_POOL_ID,
// 1 to maxWorkers): a platform binds its ports seconds after they are picked
// (after its migrations), and two workers once picked the same one in that
// window ("port 23857 (ORGANISATION_RPC_PORT) is already in use", CI,
// 2026-11-29). Outside vitest (the bench), the whole range.
const RANGE_LOW = 20_000;
const RANGE_HIGH = 32_700;
const SLICES = 4;
const SLICE = Math.floor((RANGE_HIGH - RANGE_LOW) / SLICES);
const POOL_ID = Number(process.env.VITEST_POOL_ID);
const PICK_LOW = Number.isInteger(POOL_ID) && POOL_ID >= 1 ? RANGE_LOW + ((POOL_ID - 1) % SLICES) * SLICE : RANGE_LOW;
const PICK_HIGH = Number.isInteger(POOL_ID) && POOL_ID >= 1 ? PICK_LOW + SLICE : RANGE_HIGH;

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = PICK_LOW + Math.floor(Math.random() * (PICK_HIGH - PICK_LOW));
    // Not twice to this process (platformPorts asks for six at once).
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PICK_LOW}-${PICK_HIGH}`);
}

/** Free ports for the gateway, its metrics and the four RPC services, as the variables npm start reads. */
export async function platformPorts(): Promise<Record<string, string>> {
  const names = [
    "GATEWAY_PORT",
    "GATEWAY_METRICS_PORT",
    "AUTH_RPC_PORT",
    "ORGANISATION_RPC_PORT",
    "WEBHOOK_RPC_PORT",
    "DELIVERY_RPC_PORT",
  ];
  const ports = await Promise.all(names.map(() => freePort()));
  return Object.fromEntries(names.map((n, i) => [n, String(ports[i])]));
}

export interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Children start in their own process group (detached), so a test can signal a whole tree. */
export function spawnProcess(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  cwd = ROOT,
  user?: { uid: number; gid: number },
): Spawned {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    ...user,
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  // "close": the process exited and every holder of its stdout/stderr (e.g. npm's children) is gone too.
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    kill: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** node with tsx, as `npm start` runs TypeScript. */
export function spawnTs(script: string, env: Record<string, string | undefined>, args: string[] = []): Spawned {
  return spawnProcess(process.execPath, ["--import", "tsx", script, ...args], env);
}

/**
 * The pids of the node processes in the process group of `p` (npm → sh → node)
 * that run scripts/run-compiled.mjs: npm start's platform.
 */
export function platformPids(p: Spawned): number[] {
  const pids: number[] = [];
  for (const pid of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      // Field 5 of /proc/<pid>/stat is the process group; the command name may hold spaces, so count after ")".
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (
        group === p.child.pid &&
        readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("scripts/run-compiled.mjs")
      )
        pids.push(Number(pid));
    } catch {
      // the process ended meanwhile
    }
  }
  if (pids.length === 0) throw new Error(`no scripts/run-compiled.mjs process in group ${p.child.pid}`);
  return pids;
}

export async function waitFor<T>(
  fn: () => Promise<T | undefined> | T | undefined,
  ms = 30_000,
  what = "condition",
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function httpReady(url: string, ms = 60_000, spawned?: Spawned): Promise<void> {
  await waitFor(
    async () => {
      if (spawned && spawned.child.exitCode !== null) throw new Error(`process exited:\n${spawned.output()}`);
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      return res.status === 200 ? true : undefined;
    },
    ms,
    url,
  );
}

// Every private nats-server of this test file. Its JetStream store must outlive
// stop() (a restart finds its streams again), so it is removed once the file's
// tests are done: by close(), or by this afterAll, registered on the file's
// suite when a test file imports this module (never outside vitest: the
// benchmark imports it too). Also when a test failed before its own cleanup.
const natsServers = new Set<NatsServer>();
if (process.env.VITEST) {
  const { afterAll } = await import("vitest");
  afterAll(async () => {
    for (const server of [...natsServers]) await server.close();
  });
}

/** A private nats-server with JetStream, on a free port, that a test may stop and start again. */
export class NatsServer {
  private proc: Spawned | undefined;
  private constructor(
    readonly port: number,
    private readonly storeDir: string,
  ) {}

  static async start(): Promise<NatsServer> {
    const server = new NatsServer(await freePort(), await mkdtemp(path.join(tmpdir(), "bizcard-nats-")));
    natsServers.add(server);
    try {
      await server.restart();
    } catch (err) {
      await server.close();
      throw err;
    }
    return server;
  }

  /** Stops it for good and removes its JetStream store. */
  async close(): Promise<void> {
    natsServers.delete(this);
    await this.stop();
    await rm(this.storeDir, { recursive: true, force: true });
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async restart(): Promise<void> {
    this.proc = spawnProcess(
      NATS_SERVER_BIN,
      ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir],
      {},
    );
    await waitFor(
      () =>
        new Promise<boolean | undefined>((resolve) => {
          const s = net.connect(this.port, "127.0.0.1");
          s.once("connect", () => {
            s.destroy();
            resolve(true);
          });
          s.once("error", () => resolve(undefined));
        }),
      15_000,
      "nats-server",
    );
  }

  async stop(): Promise<void> {
    await this.proc?.kill("SIGTERM");
    this.proc = undefined;
  }
}

export interface BizcardRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The real `bizcard` command (bin/bizcard.js) run to its exit with `env`: exit status, stdout and stderr. */
export async function runBizcard(args: string[], env: Record<string, string | undefined>): Promise<BizcardRun> {
  const p = spawnProcess(process.execPath, [path.join(ROOT, "bin/bizcard.js"), ...args], env);
  let stdout = "";
  let stderr = "";
  p.child.stdout!.on("data", (d) => (stdout += d));
  p.child.stderr!.on("data", (d) => (stderr += d));
  return { code: await p.exited, stdout, stderr };
}
