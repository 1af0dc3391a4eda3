// The platform as docker-compose.yml runs it: each service and the gateway as
// its own process (their real main.ts), configured through the very
// environment variable names the compose file sets, on PostgreSQL and NATS
// JetStream. Administration goes through the `bizcard` command; the events it
// causes are read back from the stream; the RPC ports refuse callers without
// the internal credential; SIGTERM drains every process to exit code 0.
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
import { Code, ConnectError } from "@connectrpc/connect";
import { connect, type JetStreamClient, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import { ContactEventSchema, EventType, type ContactEvent } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { loadConfig } from "../services/shared/config.js";
import { EMBEDDED_POOL_MAX, prepareEmbeddedPostgres, startEmbeddedPostgres, type EmbeddedPostgres } from "../services/shared/embedded-postgres.js";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { TEST_NATS_URL, backendMode, createTestDatabase, uniqueName, type TestDatabase } from "./support/backends.js";
import { unpublishedOutboxRows } from "./support/outbox.js";
import { NatsServer, ROOT, freePort, httpReady, spawnProcess, spawnTs, waitFor, type Spawned } from "./support/processes.js";

const SERVICES = ["organisation", "auth", "webhook", "delivery"] as const;
type ServiceName = (typeof SERVICES)[number];
type ProcessName = ServiceName | "gateway";

const mode = backendMode();
const TOKEN = randomBytes(32).toString("base64url");
const STREAM = uniqueName("T_");
const PREFIX = uniqueName("t");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let natsServer: NatsServer | undefined;
let natsUrl: string;
let db: TestDatabase | undefined;
const embedded: EmbeddedPostgres[] = [];
let embeddedDir: string | undefined;
const ports = {} as Record<ProcessName, number>;
const procs = {} as Record<ProcessName, Spawned>;
const envs = {} as Record<ProcessName, Record<string, string>>;
let cliEnv: Record<string, string | undefined>;
let startupMs = 0;
let nc: NatsConnection | undefined;

const rpcUrl = (name: ServiceName) => `http://127.0.0.1:${ports[name]}`;

/** Every variable services/shared/config.ts reads: the ambient environment must not leak any into the children. */
function configVariables(sample: Record<string, string>): string[] {
  return Object.keys({ ...loadConfig({}), ...loadConfig(sample) }).filter((k) => /^[A-Z][A-Z0-9_]*$/.test(k));
}

/** The names docker-compose.yml sets in the platform containers' environment (its x-…-env blocks). */
function composeVariableNames(): Set<string> {
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

function environment(databaseUrl: string, poolMax: number): { service: Record<string, string>; gateway: Record<string, string> } {
  const common = {
    LOG_LEVEL: "info", // the SIGTERM test reads the "stopped" line
    INTERNAL_RPC_TOKEN: TOKEN,
    RPC_TIMEOUT_MS: "15000",
    AUTH_RPC_URL: rpcUrl("auth"),
    ORGANISATION_RPC_URL: rpcUrl("organisation"),
    WEBHOOK_RPC_URL: rpcUrl("webhook"),
    DELIVERY_RPC_URL: rpcUrl("delivery"),
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
      PUBLIC_URL: `http://127.0.0.1:${ports.gateway}`,
    },
  };
}

/** Unset every config variable of the ambient environment that `env` does not set. */
function isolated(env: Record<string, string>, known: string[]): Record<string, string | undefined> {
  return { ...Object.fromEntries(known.map((k) => [k, undefined])), DATA_DIR: undefined, ...env };
}

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
    envs[name] = { ...environment(databaseUrls[name], poolMax).service };
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

/** The real `bizcard` command (bin/bizcard.js), its stdout kept apart from stderr. */
async function bizcard(args: string[]): Promise<unknown> {
  const p = spawnProcess(process.execPath, ["bin/bizcard.js", ...args], cliEnv);
  let stdout = "";
  p.child.stdout!.on("data", (d) => (stdout += d));
  const code = await p.exited;
  expect(code, `bizcard ${args.join(" ")}:\n${p.output()}`).toBe(0);
  const lines = stdout.split("\n").filter(Boolean);
  expect(lines, "--json prints one JSON object and nothing else").toHaveLength(1);
  return JSON.parse(lines[0]!);
}

interface StreamMessage {
  subject: string;
  msgId: string | undefined;
  event: ContactEvent;
}

/** Every message of the stream, read with an ordered (ephemeral) consumer. */
async function readStream(js: JetStreamClient, jsm: JetStreamManager): Promise<StreamMessage[]> {
  const info = await jsm.streams.info(STREAM);
  const total = info.state.messages;
  if (total === 0) return [];
  // One filter as a string (filter_subject): an array becomes filter_subjects, which nats-server 2.9 ignores.
  const consumer = await js.consumers.get(STREAM, { filterSubjects: `${PREFIX}.contact.>` });
  const out: StreamMessage[] = [];
  const batch = await consumer.fetch({ max_messages: total, expires: 5000 });
  for await (const m of batch) {
    out.push({ subject: m.subject, msgId: m.headers?.get("Nats-Msg-Id"), event: fromBinary(ContactEventSchema, m.data) });
    if (m.info.pending === 0) break;
  }
  return out;
}

async function refused(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe("the platform as separate processes", () => {
  let orgId: string;
  let contact: Record<string, string>;

  it("runs with the environment variable names docker-compose.yml sets", async () => {
    const compose = composeVariableNames();
    expect(compose.size).toBeGreaterThan(10);
    const used = new Set([...Object.keys(envs.organisation), ...Object.keys(envs.gateway)]);
    expect([...used].filter((k) => !compose.has(k)), "set here but not in docker-compose.yml").toEqual([]);
    expect([...compose].filter((k) => !used.has(k)), "set in docker-compose.yml but not here").toEqual([]);
    for (const name of SERVICES) expect(Object.keys(envs[name]).sort()).toEqual(Object.keys(envs.organisation).sort());

    const res = await fetch(`http://127.0.0.1:${ports.gateway}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "ok" } });
    for (const name of SERVICES) {
      const r = await fetch(`${rpcUrl(name)}/readyz`);
      expect(await r.json(), name).toEqual({ status: "ok", checks: { database: "ok", bus: "ok" } });
    }
  });

  it("administers through the bizcard command, with the JSON shapes of CONTRACT.md", async () => {
    const email = `${uniqueName("owner")}@acme.test`;
    const org = (await bizcard(["org", "create", "--name", "Acme Cards", "--email", email, "--password", "correct horse battery", "--json"])) as {
      organisation: { id: string; name: string };
      user: { id: string; email: string };
    };
    expect(org).toEqual({ organisation: { id: expect.stringMatching(UUID), name: "Acme Cards" }, user: { id: expect.stringMatching(UUID), email } });
    orgId = org.organisation.id;

    contact = (await bizcard([
      "contact", "create", "--org", orgId, "--first-name", "Ada", "--last-name", "Lovelace",
      "--email", "ada@example.com", "--company", "Engines", "--json",
    ])) as Record<string, string>;
    expect(Object.keys(contact).sort()).toEqual(
      ["address", "company", "created_at", "email", "first_name", "id", "job_title", "last_name", "notes", "phone", "updated_at", "website"],
    );
    expect(contact).toMatchObject({ first_name: "Ada", last_name: "Lovelace", email: "ada@example.com", company: "Engines", job_title: "", phone: "" });
    expect(contact.id).toMatch(UUID);
    expect(contact.created_at).toMatch(RFC3339);
    expect(contact.updated_at).toMatch(RFC3339);

    const updated = (await bizcard(["contact", "update", "--org", orgId, "--id", contact.id!, "--job-title", "Analyst", "--company", "", "--json"])) as Record<string, string>;
    expect(updated).toMatchObject({ id: contact.id, first_name: "Ada", email: "ada@example.com", job_title: "Analyst", company: "", created_at: contact.created_at });
    expect(Date.parse(updated.updated_at!)).toBeGreaterThanOrEqual(Date.parse(contact.created_at!));

    const client = (await bizcard(["client", "create", "--name", "X", "--redirect-uri", "https://app.example/cb", "--json"])) as Record<string, unknown>;
    expect(Object.keys(client).sort()).toEqual(["client_id", "client_secret", "name", "redirect_uris", "scopes"]);
    expect(client).toMatchObject({ name: "X", redirect_uris: ["https://app.example/cb"] });
    expect(client.client_id).toMatch(/^bc_/);
    expect(client.client_secret).toMatch(/^bcs_.{32,}$/);
    expect(client.scopes).toEqual(["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"]);

    const pub = (await bizcard(["client", "create", "--name", "Public", "--redirect-uri", "https://app.example/cb", "--public", "--json"])) as Record<string, unknown>;
    expect(pub.client_secret, "a public client has no secret").toBeUndefined();
    expect(pub.client_id).not.toBe(client.client_id);
  });

  it("puts exactly one contact.created and one contact.updated on the stream, each with Nats-Msg-Id = event_id", { timeout: 90_000 }, async () => {
    expect(contact?.id, "needs the contact of the previous test").toBeDefined();
    nc = await connect({ servers: natsUrl, name: "distributed-test" });
    const js = nc.jetstream();
    const jsm = await nc.jetstreamManager();
    const mine = async () => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("reading the stream took over 15 s")), 15_000)));
      try {
        return (await Promise.race([readStream(js, jsm), timeout])).filter((m) => m.event.contact?.id === contact.id);
      } finally {
        clearTimeout(timer);
      }
    };
    await waitFor(async () => ((await mine()).length >= 2 ? true : undefined), 30_000, "two contact events on the stream");
    // Nothing more arrives: the organisation service has nothing left to publish.
    const organisationDb = mode.postgres ? db!.url : embedded[SERVICES.indexOf("organisation")]!.url;
    await waitFor(async () => ((await unpublishedOutboxRows(organisationDb)) === 0 ? true : undefined), 30_000, "an empty outbox");
    const messages = await mine();
    expect(messages.map((m) => m.event.type)).toEqual([EventType.CONTACT_CREATED, EventType.CONTACT_UPDATED]);
    expect(messages.map((m) => m.subject)).toEqual([`${PREFIX}.contact.created`, `${PREFIX}.contact.updated`]);
    for (const m of messages) {
      expect(m.event.eventId).toMatch(UUID);
      expect(m.msgId).toBe(m.event.eventId);
      expect(m.event.organisationId).toBe(orgId);
    }
    expect(messages[0]!.event.eventId).not.toBe(messages[1]!.event.eventId);
    expect(messages[0]!.event.contact?.company).toBe("Engines");
    expect(messages[1]!.event.contact?.company).toBe("");
    expect(messages[1]!.event.contact?.jobTitle).toBe("Analyst");
  });

  it("refuses an RPC without the internal credential on every service port", async () => {
    const noToken = { timeoutMs: 10_000 };
    const wrongToken = { timeoutMs: 10_000, internalToken: `${TOKEN}x` };
    for (const options of [noToken, wrongToken]) {
      const calls: [string, () => Promise<unknown>][] = [
        ["organisation", () => createRpcClient(OrganisationService, { baseUrl: rpcUrl("organisation"), ...options }).getOrganisation({ id: orgId })],
        ["auth", () => createRpcClient(AuthService, { baseUrl: rpcUrl("auth"), ...options }).getClient({ clientId: "x" })],
        ["webhook", () => createRpcClient(WebhookService, { baseUrl: rpcUrl("webhook"), ...options }).listSubscriptions({})],
        ["delivery", () => createRpcClient(DeliveryService, { baseUrl: rpcUrl("delivery"), ...options }).listDeliveryAttempts({})],
      ];
      for (const [name, call] of calls) {
        const err = await refused(call());
        expect(err.code, `${name}: ${err.message}`).toBe(Code.Unauthenticated);
      }
    }
    // The same call with the credential goes through: the refusal was the credential's.
    const ok = await createRpcClient(OrganisationService, { baseUrl: rpcUrl("organisation"), timeoutMs: 10_000, internalToken: TOKEN }).getOrganisation({
      id: orgId,
    });
    expect(ok.organisation?.name).toBe("Acme Cards");
  });

  it("logs one JSON line per request, with the caller's request id carried from the gateway into the service", async () => {
    const requestId = `trace-${Date.now()}`;
    const res = await fetch(`http://127.0.0.1:${ports.gateway}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "x-request-id": requestId },
      body: "grant_type=client_credentials&client_id=bc_x&client_secret=bcs_y",
    });
    expect(res.headers.get("x-request-id")).toBe(requestId);
    const lines = (p: Spawned) =>
      p
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const gatewayLine = await waitFor(() => lines(procs.gateway).find((l) => l.requestId === requestId && l.msg === "request"), 10_000);
    expect(gatewayLine).toMatchObject({ method: "POST", url: "/oauth/token", status: res.status });
    const authLines = await waitFor(() => {
      const found = lines(procs.auth).filter((l) => l.requestId === requestId);
      return found.length ? found : undefined;
    }, 10_000);
    expect(authLines).toHaveLength(1);
    expect(authLines[0]).toMatchObject({ procedure: "bizcard.auth.v1.AuthService/ExchangeToken", msg: "rpc" });
  });

  it("drains every process on SIGTERM to exit code 0 within a few seconds", async () => {
    const names = ["gateway", ...SERVICES] as const;
    const results = await Promise.all(
      names.map(async (name) => {
        const p = procs[name];
        expect(p.child.exitCode, `${name} died early:\n${p.output()}`).toBeNull();
        const t0 = performance.now();
        p.child.kill("SIGTERM");
        const code = await Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000, "timeout"))]);
        return { name, code, ms: Math.round(performance.now() - t0), output: p.output() };
      }),
    );
    console.log(`[distributed] SIGTERM to exit: ${results.map((r) => `${r.name} ${r.ms} ms`).join(", ")}`);
    for (const r of results) {
      expect(r.code, `${r.name}:\n${r.output.slice(-2000)}`).toBe(0);
      expect(r.output, r.name).toMatch(/"msg":"stopped"/);
    }
  }, 60_000);
});
