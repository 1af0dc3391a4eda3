// The platform as docker-compose.yml runs it, for test/platform/distributed.test.ts:
// each service and the gateway as its own process (their real main.ts),
// configured through the very environment variable names the compose file
// sets, on PostgreSQL and NATS JetStream.
//
// Backends: the machine's PostgreSQL (one fresh database, each service in its
// own schema) and NATS (a unique stream and subject prefix) when
// test/global-setup.ts found them; otherwise one PGlite per service, served
// from this test process, and a private nats-server.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { connect, type JetStreamClient, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, expect } from "vitest";
import { ContactEventSchema, type ContactEvent } from "../../gen/bizcard/events/v1/events_pb.js";
import { loadConfig } from "../../services/shared/config.js";
import {
  EMBEDDED_POOL_MAX,
  prepareEmbeddedPostgres,
  startEmbeddedPostgres,
  type EmbeddedPostgres,
} from "../../scripts/embedded/embedded-postgres.js";
import { TEST_NATS_URL, backendMode, createTestDatabase, uniqueName, type TestDatabase } from "./backends.js";
import { NatsServer, ROOT, freePort, httpReady, spawnProcess, spawnTs, type Spawned } from "./processes.js";

export const SERVICES = ["organisation", "auth", "webhook", "delivery"] as const;
export type ServiceName = (typeof SERVICES)[number];
export type ProcessName = ServiceName | "gateway";

export const mode = backendMode();
export const TOKEN = randomBytes(32).toString("base64url");
/** WEBHOOK_SECRET_ENCRYPTION_KEY: the webhook process's alone, as in docker-compose.yml. */
export const SECRET_KEY = randomBytes(32).toString("base64");
export const STREAM = uniqueName("T_");
export const PREFIX = uniqueName("t");
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export let natsServer: NatsServer | undefined;
export let natsUrl: string;
export let db: TestDatabase | undefined;
export const embedded: EmbeddedPostgres[] = [];
export let embeddedDir: string | undefined;
export const ports = {} as Record<ProcessName, number>;
export const procs = {} as Record<ProcessName, Spawned>;
export const envs = {} as Record<ProcessName, Record<string, string>>;
export let cliEnv: Record<string, string | undefined>;
export let startupMs = 0;
export let nc: NatsConnection | undefined;

/** The test's connection to the stream's server; closed (and the stream deleted) after the file. */
export async function connectNats(): Promise<NatsConnection> {
  nc = await connect({ servers: natsUrl, name: "distributed-test" });
  return nc;
}

export const rpcUrl = (name: ServiceName) => `http://127.0.0.1:${ports[name]}`;

/** Every variable services/shared/config.ts reads: the ambient environment must not leak any into the children. */
export function configVariables(sample: Record<string, string>): string[] {
  return Object.keys({ ...loadConfig({}), ...loadConfig(sample) }).filter((k) => /^[A-Z][A-Z0-9_]*$/.test(k));
}

/** The names docker-compose.yml sets in the platform containers' environment (its x-…-env blocks). */
export function composeVariableNames(): Set<string> {
  const text = readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8");
  const names = new Set<string>();
  let inEnvBlock = false;
  for (const line of text.split("\n")) {
    if (/^x-[a-z-]+-env:/.test(line)) inEnvBlock = true;
    else if (/^\S/.test(line)) inEnvBlock = false;
    const m = line.match(/^ {2}([A-Z][A-Z0-9_]*):/);
    if (inEnvBlock && m) names.add(m[1]!);
  }
  return names;
}

export function environment(
  databaseUrl: string,
  poolMax: number,
): { service: Record<string, string>; gateway: Record<string, string> } {
  const common = {
    LOG_LEVEL: "info", // the SIGTERM test reads the "stopped" line
    INTERNAL_RPC_TOKEN: TOKEN,
    RPC_TIMEOUT_MS: "15000",
    AUTH_RPC_URL: rpcUrl("auth"),
    ORGANISATION_RPC_URL: rpcUrl("organisation"),
    WEBHOOK_RPC_URL: rpcUrl("webhook"),
    DELIVERY_RPC_URL: rpcUrl("delivery"),
    // The issuer and the tokens' audience: the auth service and the gateway agree on it.
    PUBLIC_URL: `http://127.0.0.1:${ports.gateway}`,
    OAUTH_DYNAMIC_REGISTRATION: "false",
    OAUTH_CLIENT_METADATA_DOCUMENTS: "true",
    // Tracing, as compose passes it: empty, nothing exported.
    OTEL_EXPORTER_OTLP_ENDPOINT: "",
  };
  return {
    service: {
      ...common,
      DATABASE_URL: databaseUrl,
      DATABASE_POOL_MAX: String(poolMax),
      MIGRATE_ON_START: "true",
      NATS_URL: natsUrl,
      NATS_STREAM: STREAM,
      NATS_SUBJECT_PREFIX: PREFIX,
      // docker-compose.yml listens on 0.0.0.0 inside its network; here, loopback only.
      RPC_HOST: "127.0.0.1",
      AUTH_RPC_PORT: String(ports.auth),
      ORGANISATION_RPC_PORT: String(ports.organisation),
      WEBHOOK_RPC_PORT: String(ports.webhook),
      DELIVERY_RPC_PORT: String(ports.delivery),
      WEBHOOK_ALLOW_INSECURE_TARGETS: "false",
      OAUTH_ALLOW_INSECURE_REDIRECTS: "false",
    },
    gateway: {
      ...common,
      GATEWAY_HOST: "127.0.0.1",
      GATEWAY_PORT: String(ports.gateway),
      // Its /metrics on any free loopback port (docker-compose.yml: 9464 on 0.0.0.0, inside the network).
      RPC_HOST: "127.0.0.1",
      GATEWAY_METRICS_PORT: "0",
      // As in docker-compose.yml: revocations reach its bearer cache over the bus.
      ...(natsUrl ? { NATS_URL: natsUrl, NATS_STREAM: STREAM, NATS_SUBJECT_PREFIX: PREFIX } : {}),
    },
  };
}

/** Unset every config variable of the ambient environment that `env` does not set. */
export function isolated(env: Record<string, string>, known: string[]): Record<string, string | undefined> {
  return { ...Object.fromEntries(known.map((k) => [k, undefined])), DATA_DIR: undefined, ...env };
}

/** The real `bizcard` command (bin/bizcard.js), its stdout kept apart from stderr. */
export async function bizcard(args: string[]): Promise<unknown> {
  const p = spawnProcess(process.execPath, ["bin/bizcard.js", ...args], cliEnv);
  let stdout = "";
  p.child.stdout!.on("data", (d) => (stdout += d));
  const code = await p.exited;
  expect(code, `bizcard ${args.join(" ")}:\n${p.output()}`).toBe(0);
  const lines = stdout.split("\n").filter(Boolean);
  expect(lines, "--json prints one JSON object and nothing else").toHaveLength(1);
  return JSON.parse(lines[0]!);
}

export interface StreamMessage {
  subject: string;
  msgId: string | undefined;
  event: ContactEvent;
}

/** Every message of the stream, read with an ordered (ephemeral) consumer. */
export async function readStream(js: JetStreamClient, jsm: JetStreamManager): Promise<StreamMessage[]> {
  const info = await jsm.streams.info(STREAM);
  const total = info.state.messages;
  if (total === 0) return [];
  // One filter as a string (filter_subject): an array becomes filter_subjects, which nats-server 2.9 ignores.
  const consumer = await js.consumers.get(STREAM, { filterSubjects: `${PREFIX}.contact.>` });
  const out: StreamMessage[] = [];
  const batch = await consumer.fetch({ max_messages: total, expires: 5000 });
  for await (const m of batch) {
    out.push({
      subject: m.subject,
      msgId: m.headers?.get("Nats-Msg-Id"),
      event: fromBinary(ContactEventSchema, m.data),
    });
    if (m.info.pending === 0) break;
  }
  return out;
}

export async function refused(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

/** Registers the file's platform: started before its tests, stopped after. */
export function useDistributedPlatform(): void {
  beforeAll(async () => {
    const started = performance.now();
    if (mode.nats) natsUrl = TEST_NATS_URL;
    else {
      natsServer = await NatsServer.start();
      natsUrl = natsServer.url;
    }
    for (const name of [...SERVICES, "gateway"] as const) ports[name] = await freePort();

    const databaseUrls = {} as Record<ServiceName, string>;
    let poolMax: number;
    if (mode.postgres) {
      db = await createTestDatabase();
      for (const name of SERVICES) databaseUrls[name] = db.url;
      poolMax = db.poolMax;
    } else {
      // PGlite is single-session: one instance per service, a pool of one.
      embeddedDir = await mkdtemp(path.join(tmpdir(), "bizcard-distributed-"));
      const dir = embeddedDir;
      await prepareEmbeddedPostgres(dir, SERVICES);
      const dbs = await Promise.all(SERVICES.map((name) => startEmbeddedPostgres(dir, name)));
      embedded.push(...dbs);
      SERVICES.forEach((name, i) => (databaseUrls[name] = dbs[i]!.url));
      poolMax = EMBEDDED_POOL_MAX;
    }

    const sample = environment("postgres://x/y", 1);
    const known = configVariables({ ...sample.service, ...sample.gateway });
    const spawnStarted = performance.now();
    for (const name of SERVICES) {
      envs[name] = {
        ...environment(databaseUrls[name], poolMax).service,
        ...(name === "webhook" ? { WEBHOOK_SECRET_ENCRYPTION_KEY: SECRET_KEY } : {}),
      };
      procs[name] = spawnTs(`services/${name}/main.ts`, isolated(envs[name], known));
    }
    envs.gateway = environment("postgres://unused/x", 1).gateway;
    procs.gateway = spawnTs("gateway/main.ts", isolated(envs.gateway, known));
    cliEnv = isolated(
      { ORGANISATION_RPC_URL: rpcUrl("organisation"), AUTH_RPC_URL: rpcUrl("auth"), INTERNAL_RPC_TOKEN: TOKEN },
      known,
    );

    // Each service's own /readyz (its database and the bus), then the gateway's (every service).
    await Promise.all(SERVICES.map((name) => httpReady(`${rpcUrl(name)}/readyz`, 150_000, procs[name])));
    await httpReady(`http://127.0.0.1:${ports.gateway}/readyz`, 60_000, procs.gateway);
    startupMs = Math.round(performance.now() - spawnStarted);
    console.log(
      `[distributed] backends: PostgreSQL ${mode.postgres ? "real" : "PGlite per service"}, NATS ${mode.nats ? "real" : "private nats-server"}; ` +
        `five processes ready in ${startupMs} ms (setup total ${Math.round(performance.now() - started)} ms)`,
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all(
      Object.values(procs).map(async (p) => {
        if (p.child.exitCode !== null || p.child.signalCode !== null) return;
        p.child.kill("SIGTERM");
        const code = await Promise.race([p.exited, new Promise((r) => setTimeout(r, 10_000, "timeout"))]);
        if (code === "timeout") await p.kill("SIGKILL");
      }),
    );
    if (nc) {
      if (mode.nats) await (await nc.jetstreamManager()).streams.delete(STREAM).catch(() => {});
      await nc.close();
    } else if (mode.nats) {
      const c = await connect({ servers: natsUrl }).catch(() => undefined);
      if (c) {
        await (await c.jetstreamManager()).streams.delete(STREAM).catch(() => {});
        await c.close();
      }
    }
    await natsServer?.close();
    await db?.drop();
    for (const e of embedded) await e.close();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  }, 60_000);
}
