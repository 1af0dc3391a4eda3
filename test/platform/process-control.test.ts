// The platform's processes as an operator drives them: `npm start` stopped by
// killing the npm pid (what `npm start &` then `kill $!` does), SIGTERM to a
// gateway that holds a client whose body stopped arriving, and a port that
// another process already holds.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { TEST_NATS_URL, backendMode, createTestDatabase, uniqueName } from "../support/backends.js";
import {
  NatsServer,
  httpReady,
  platformPorts,
  spawnProcess,
  spawnTs,
  waitFor,
  freePort,
  type Spawned,
} from "../support/processes.js";
import { deleteStream } from "../support/stream.js";

const TOKEN = randomBytes(32).toString("base64url");
const started: Spawned[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  // Whatever a failed test left running goes, with its whole process group.
  for (const p of started) {
    try {
      process.kill(-p.child.pid!, "SIGKILL");
    } catch {
      // the group is gone already
    }
  }
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

function spawned(p: Spawned): Spawned {
  started.push(p);
  return p;
}

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Something else holding a port, as another program would: it hangs up on whoever connects. */
async function occupy(port: number): Promise<void> {
  const holder = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    holder.once("error", reject);
    holder.listen(port, "127.0.0.1", () => resolve());
  });
  cleanups.push(() => new Promise((resolve) => holder.close(resolve)));
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

async function exitOf(p: Spawned, ms: number, what: string): Promise<number | null> {
  await waitFor(() => (p.child.exitCode !== null || p.child.signalCode !== null ? true : undefined), ms, what);
  return p.child.exitCode;
}

/** The embedded platform's variables, on free ports and a fresh data folder. */
async function platformEnv(): Promise<Record<string, string>> {
  return {
    DATABASE_URL: "",
    NATS_URL: "",
    INTERNAL_RPC_TOKEN: "",
    DATA_DIR: await tempDir("bizcard-process-"),
    ...(await platformPorts()),
    LOG_LEVEL: "warn",
  };
}

describe("npm start", () => {
  it("`kill <npm pid>` stops the whole platform: every port closes, node exits, npm exits 0", async () => {
    const env = await platformEnv();
    const npm = spawned(spawnProcess("npm", ["start"], env));
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/readyz`, 150_000, npm);

    npm.child.kill("SIGTERM"); // the npm pid only, as `kill $!` does
    const ports = [
      "GATEWAY_PORT",
      "AUTH_RPC_PORT",
      "ORGANISATION_RPC_PORT",
      "WEBHOOK_RPC_PORT",
      "DELIVERY_RPC_PORT",
    ].map((v) => Number(env[v]));
    await waitFor(
      async () => ((await Promise.all(ports.map(accepts))).some(Boolean) ? undefined : true),
      60_000,
      "every port of the platform to close",
    );
    expect(await exitOf(npm, 60_000, "npm to exit")).toBe(0);
    // "close": every holder of npm's output, node included, is gone.
    expect(await npm.exited).toBe(0);
    expect(npm.output()).toContain("bizcard platform stopped");
  }, 240_000);

  it("a port already in use is one line naming it and its variable, and exit 1", async () => {
    const env = await platformEnv();
    await occupy(Number(env.GATEWAY_PORT));
    const npm = spawned(spawnProcess("npm", ["start", "--silent"], env));
    expect(await exitOf(npm, 150_000, "npm start to exit")).toBe(1);
    await npm.exited;
    expect(npm.output()).toBe(`bizcard: port ${env.GATEWAY_PORT} (GATEWAY_PORT) is already in use\n`);
  }, 180_000);
});

describe("the gateway as its own process", () => {
  const gatewayEnv = async (overrides: Record<string, string> = {}) => ({
    INTERNAL_RPC_TOKEN: TOKEN,
    GATEWAY_PORT: String(await freePort()),
    GATEWAY_METRICS_PORT: "0",
    LOG_LEVEL: "warn",
    ...overrides,
  });

  it("SIGTERM with a client whose body stopped arriving: the client gets 503 in the one shape, the process exits 0", async () => {
    // A request timeout longer than the 25 s drain limit: only the drain can end this body.
    const env = await gatewayEnv({ GATEWAY_REQUEST_TIMEOUT_MS: "120000" });
    const gateway = spawned(spawnTs("gateway/main.ts", env));
    await httpReady(`http://127.0.0.1:${env.GATEWAY_PORT}/healthz`, 60_000, gateway);

    // The 100 Continue proves the gateway read the head and began this request.
    const socket = net.connect(Number(env.GATEWAY_PORT), "127.0.0.1");
    let data = "";
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    socket.on("data", (d) => (data += d));
    socket.write(
      "POST /oauth/token HTTP/1.1\r\nHost: x\r\nX-Request-Id: stalled-at-shutdown\r\nExpect: 100-continue\r\n" +
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n",
    );
    await waitFor(() => (data.startsWith("HTTP/1.1 100 ") ? true : undefined), 30_000, "100 Continue");
    socket.write("grant_type=x");

    gateway.child.kill("SIGTERM");
    expect(await exitOf(gateway, 60_000, "the gateway to exit")).toBe(0);
    await closed;
    const answer = data.slice(data.indexOf("\r\n\r\n") + 4);
    expect(answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nx-request-id: stalled-at-shutdown\r\n/i);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "temporarily_unavailable",
      error_description: expect.any(String),
    });
  }, 120_000);

  it("a port already in use is one line naming it and its variable, and exit 1", async () => {
    const env = await gatewayEnv();
    await occupy(Number(env.GATEWAY_PORT));
    const gateway = spawned(spawnTs("gateway/main.ts", env));
    expect(await exitOf(gateway, 60_000, "the gateway to exit")).toBe(1);
    await gateway.exited;
    expect(gateway.output()).toBe(`gateway: port ${env.GATEWAY_PORT} (GATEWAY_PORT) is already in use\n`);
  }, 90_000);
});

describe("a service as its own process", () => {
  it("a port already in use is one line naming it and its variable, and exit 1", async () => {
    const db = await createTestDatabase();
    cleanups.push(() => db.drop());
    let natsUrl = TEST_NATS_URL;
    if (!backendMode().nats) {
      const nats = await NatsServer.start();
      cleanups.push(() => nats.stop());
      natsUrl = nats.url;
    }
    const stream = uniqueName("T_");
    cleanups.push(() => deleteStream(natsUrl, stream));
    const port = await freePort();
    await occupy(port);
    const service = spawned(
      spawnTs("services/organisation/main.ts", {
        DATABASE_URL: db.url,
        NATS_URL: natsUrl,
        NATS_STREAM: stream,
        NATS_SUBJECT_PREFIX: uniqueName("t"),
        INTERNAL_RPC_TOKEN: TOKEN,
        ORGANISATION_RPC_PORT: String(port),
        LOG_LEVEL: "warn",
      }),
    );
    expect(await exitOf(service, 90_000, "the service to exit")).toBe(1);
    await service.exited;
    expect(service.output()).toBe(`organisation: port ${port} (ORGANISATION_RPC_PORT) is already in use\n`);
  }, 120_000);
});
