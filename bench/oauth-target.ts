// What the OAuth rows of the benchmark call:
// - the platform as `npm start` runs it (scripts/start.ts, one process) on
//   this machine's PostgreSQL (a fresh database, dropped after) and NATS
//   JetStream (a unique stream, deleted after), with one organisation and one
//   client it owns (client_credentials): tokens are durable in PostgreSQL, and
//   bearer checks are cached as in production (revocations on NATS);
// - the peer, oidc-provider (bench/peer/), installed into a folder under the
//   system's temporary directory on first use: with its in-memory adapter, or
//   durable, on its PostgreSQL adapter (bench/peer/pg-adapter.mjs) in a fresh
//   database of this machine's PostgreSQL (dropped after), where every token
//   is committed before it is answered.
import { createHash, randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { createDatabaseOn } from "../test/support/backends.js";
import { freePort, httpReady, platformPorts, ROOT, spawnProcess, type Spawned } from "../test/support/processes.js";
import { PLATFORM_ENV, startArgs } from "../scripts/platform-processes.js";
import { deleteStream } from "../test/support/stream.js";
import { vacuumDatabase, withClient } from "./pipeline-vacuum.js";
import { ADMIN_DATABASE_URL, NATS_URL } from "./rpc-target.js";

export interface PlatformTarget {
  gateway: string;
  clientId: string;
  clientSecret: string;
  /** A client_credentials token with organisation:read. */
  accessToken: string;
  /** The platform's process and its database (to read their CPU time). */
  pid: number;
  databaseName: string;
  databaseUrl: string;
  close(): Promise<void>;
}

export async function startPlatform(): Promise<PlatformTarget> {
  const suffix = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const stream = `BENCH_${suffix}`;
  const databaseName = `bizcard_bench_${suffix}`;
  const db = await createDatabaseOn(ADMIN_DATABASE_URL, databaseName);
  const dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-bench-"));
  const ports = await platformPorts();
  const token = randomBytes(32).toString("base64url");
  let platform: Spawned | undefined;
  const close = async () => {
    await platform?.kill();
    // BENCH_PLATFORM_OUTPUT=<file>: what the platform printed (the GC trace of BENCH_NODE_FLAGS).
    if (process.env.BENCH_PLATFORM_OUTPUT && platform)
      await writeFile(process.env.BENCH_PLATFORM_OUTPUT, platform.output());
    await deleteStream(NATS_URL, stream).catch(() => undefined);
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    // BENCH_CPU_PROF=<folder>: the platform writes a V8 CPU profile there when it stops.
    const profile = process.env.BENCH_CPU_PROF;
    // BENCH_NODE_FLAGS: more flags for the platform's node (--trace-gc-nvp…; bench/cpu-per-request.ts).
    const extraFlags = process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
    const env = {
      ...PLATFORM_ENV,
      ...ports,
      DATABASE_URL: db.url,
      NATS_URL,
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: `bench${suffix}`,
      INTERNAL_RPC_TOKEN: token,
      DATA_DIR: dataDir,
      // As the gateway rows: no line per request.
      LOG_LEVEL: "warn",
    };
    // As npm start runs it (package.json's start script: scripts/platform-processes.ts startArgs).
    platform = spawnProcess(
      process.execPath,
      startArgs([...(profile ? ["--cpu-prof", "--cpu-prof-dir", path.resolve(profile)] : []), ...extraFlags]),
      env,
    );
    const gateway = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
    await httpReady(`${gateway}/readyz`, 120_000, platform);
    const rpc = (port: string) => ({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 10_000, internalToken: token });
    const organisations = createRpcClient(OrganisationService, rpc(ports.ORGANISATION_RPC_PORT!));
    const auth = createRpcClient(AuthService, rpc(ports.AUTH_RPC_PORT!));
    const { organisation } = await organisations.createOrganisation({
      name: "Bench Cards",
      ownerEmail: "owner@bench.test",
      ownerPassword: "bench-password",
    });
    const { client, clientSecret } = await auth.createClient({
      name: "Bench Sync",
      ownerOrganisationId: organisation!.id,
    });
    const credentials = { client_id: client!.clientId, client_secret: clientSecret };
    const body = await postForm(`${gateway}/oauth/token`, {
      grant_type: "client_credentials",
      ...credentials,
      scope: "organisation:read",
    });
    const accessToken = String(body.access_token);
    await expectActive(`${gateway}/oauth/introspect`, { ...credentials, token: accessToken });
    // Statistics for the tables the token endpoint reads, as autovacuum would have taken them (pipeline-vacuum.ts).
    await vacuumDatabase(db.url);
    return {
      gateway,
      clientId: client!.clientId,
      clientSecret,
      accessToken,
      pid: platform.child.pid!,
      databaseName,
      databaseUrl: db.url,
      close,
    };
  } catch (err) {
    if (platform) process.stderr.write(platform.output());
    await close();
    throw err;
  }
}

export interface PeerTarget {
  url: string;
  /** bench/peer/server.mjs's client (client_credentials, client_secret_post). */
  clientId: string;
  clientSecret: string;
  /** An access token of that client (600 s), for introspection. */
  accessToken: string;
  /** The durable peer's: how many rows of a model (ClientCredentials…) its adapter holds in PostgreSQL. */
  storedRows?(model: string): Promise<number>;
  close(): Promise<void>;
}

const PEER_CLIENT = { clientId: "svc", clientSecret: "svc-secret-0123456789" };
/** What startPeer copies from bench/peer (or BENCH_PEER_DIR). */
const PEER_FILES = ["package.json", "server.mjs", "pg-adapter.mjs"];

/** POSTs a form; the JSON answer, or an error naming the status (the targets' set-up checks). */
async function postForm(url: string, params: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params),
  });
  const answer = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`${url} answered ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** The introspection row measures an active token's answer on both servers: checked once here. */
async function expectActive(url: string, params: Record<string, string>): Promise<void> {
  const answer = await postForm(url, params);
  if (answer.active !== true) throw new Error(`${url} called the bench's token inactive: ${JSON.stringify(answer)}`);
}

/** bench/peer (or BENCH_PEER_DIR) in a folder of the temporary directory named after its package.json, installed there once. */
async function installPeer(): Promise<string> {
  const source = process.env.BENCH_PEER_DIR ?? path.join(ROOT, "bench/peer");
  const manifest = await readFile(path.join(source, "package.json"));
  const dir = path.join(
    tmpdir(),
    `bizcard-bench-peer-${createHash("sha256").update(manifest).digest("hex").slice(0, 12)}`,
  );
  await mkdir(dir, { recursive: true });
  for (const file of PEER_FILES) await copyFile(path.join(source, file), path.join(dir, file));
  if (!["oidc-provider", "pg"].every((name) => existsSync(path.join(dir, "node_modules", name, "package.json")))) {
    console.log(`installing the peer (oidc-provider) into ${dir}`);
    const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--no-package-lock"], {
      cwd: dir,
      stdio: "inherit",
    });
    if (npm.status !== 0) throw new Error(`npm install of the peer failed in ${dir}`);
  }
  return dir;
}

/**
 * oidc-provider from bench/peer: with its in-memory adapter, or `durable`,
 * on its PostgreSQL adapter in a fresh database (dropped by close), checked
 * to have stored the set-up's token before any case runs.
 */
export async function startPeer(options: { durable?: boolean } = {}): Promise<PeerTarget> {
  const dir = await installPeer();
  const suffix = `${Date.now().toString(36)}${randomBytes(3).toString("hex")}`;
  const db = options.durable ? await createDatabaseOn(ADMIN_DATABASE_URL, `bizcard_bench_peer_${suffix}`) : undefined;
  const port = await freePort();
  // DATABASE_URL unset for the in-memory peer, even if this process has one.
  const peer = spawnProcess(process.execPath, ["server.mjs"], { PORT: String(port), DATABASE_URL: db?.url }, dir);
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    await peer.kill();
    await db?.drop();
  };
  const storedRows = db
    ? (model: string) =>
        withClient(
          db.url,
          async (c) =>
            (await c.query<{ n: number }>("select count(*)::int as n from oidc_payload where type = $1", [model]))
              .rows[0]!.n,
        )
    : undefined;
  try {
    await httpReady(`${url}/.well-known/openid-configuration`, 60_000, peer);
    const client = { client_id: PEER_CLIENT.clientId, client_secret: PEER_CLIENT.clientSecret };
    const { access_token } = await postForm(`${url}/token`, {
      grant_type: "client_credentials",
      ...client,
      scope: "api:read",
    });
    const accessToken = String(access_token);
    await expectActive(`${url}/token/introspection`, { ...client, token: accessToken });
    if (db) {
      const stored = await storedRows!("ClientCredentials");
      if (stored !== 1)
        throw new Error(`the durable peer's adapter holds ${stored} ClientCredentials rows after one token, not 1`);
      // Statistics for its table, as the platform's (startPlatform).
      await vacuumDatabase(db.url);
    }
    return { url, ...PEER_CLIENT, accessToken, ...(storedRows ? { storedRows } : {}), close };
  } catch (err) {
    process.stderr.write(peer.output());
    await close();
    throw err;
  }
}

/** Both peers of the OAuth rows: oidc-provider in memory, and durable on PostgreSQL. */
export interface Peers {
  memory: PeerTarget;
  durable: PeerTarget;
  close(): Promise<void>;
}

export async function startPeers(): Promise<Peers> {
  const memory = await startPeer();
  try {
    const durable = await startPeer({ durable: true });
    return { memory, durable, close: async () => void (await Promise.all([memory.close(), durable.close()])) };
  } catch (err) {
    await memory.close();
    throw err;
  }
}
