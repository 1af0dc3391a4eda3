// `npm run start:distributed`: five processes on the real PostgreSQL and NATS,
// each line prefixed with its process's name; an OAuth client_credentials
// token, /oauth/me, the authorization-code walk and a webhook delivery to a loopback receiver end to end;
// SIGTERM stops every process; a missing backend is named in one line.
import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import net from "node:net";
import path from "node:path";
import { connect } from "nats";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { TEST_NATS_URL, createTestDatabase, uniqueName, type TestDatabase } from "../support/backends.js";
import { browser, formAction, hiddenFields } from "../support/html-forms.js";
import { platformPorts, spawnProcess, waitFor, type Spawned } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";
import { GATEWAY_NODE_FLAGS, SERVICE_NODE_FLAGS } from "../../scripts/platform-processes.js";

const TOKEN = "distributed-start-token-0123456789abcdef";
const STREAM = uniqueName("SD_");
const PREFIX = uniqueName("sd");
const NAMES = ["auth", "organisation", "webhook", "delivery", "gateway"];

let db: TestDatabase;
let dataDir: string;
let receiver: Receiver;
let ports: Record<string, string>;
let started: Spawned;
let base: string;

const npm = (env: Record<string, string | undefined>) =>
  spawnProcess("npm", ["run", "--silent", "start:distributed"], env);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-start-distributed-"));
  receiver = await startReceiver();
  ports = await platformPorts();
  base = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
  started = npm({
    ...ports,
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: String(Math.max(1, Math.floor(db.poolMax / 4))),
    NATS_URL: TEST_NATS_URL,
    NATS_STREAM: STREAM,
    NATS_SUBJECT_PREFIX: PREFIX,
    INTERNAL_RPC_TOKEN: TOKEN,
    // Unset: made in DATA_DIR, as npm start makes it.
    WEBHOOK_SECRET_ENCRYPTION_KEY: undefined,
    PUBLIC_URL: base,
    WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
    DELIVERY_RETRY_SCHEDULE_SECONDS: "1",
    DATA_DIR: dataDir,
    LOG_LEVEL: "info",
  });
  await waitFor(
    () =>
      /bizcard platform ready/.test(started.output())
        ? true
        : started.child.exitCode !== null
          ? Promise.reject(new Error(started.output()))
          : undefined,
    180_000,
    "the ready banner",
  );
}, 200_000);

afterAll(async () => {
  await started?.kill("SIGTERM");
  await receiver?.close();
  const c = await connect({ servers: TEST_NATS_URL }).catch(() => undefined);
  if (c) {
    await (await c.jetstreamManager()).streams.delete(STREAM).catch(() => {});
    await c.close();
  }
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe("npm run start:distributed", () => {
  it("starts five processes, prefixes each one's lines with its name, and prints the issuer", () => {
    const out = started.output();
    for (const name of NAMES) {
      // With its V8 flags (scripts/platform-processes.ts GATEWAY_NODE_FLAGS, SERVICE_NODE_FLAGS).
      const flags = (name === "gateway" ? GATEWAY_NODE_FLAGS : SERVICE_NODE_FLAGS).map((f) => `${f} `).join("");
      // From the checkout's one build (scripts/run-compiled.mjs), as the containers run dist/.
      const main = `${name === "gateway" ? "gateway" : `services/${name}`}/main\\.js`;
      expect(out).toMatch(
        new RegExp(
          `^start +\\| starting ${name}: node ${flags}\\S*/node_modules/\\.cache/bizcard-start/[0-9a-f]+/${main}$`,
          "m",
        ),
      );
      expect(out, `${name} logs under its own name`).toMatch(new RegExp(`^${name} +\\| \\{"level"`, "m"));
    }
    expect(out).toContain(`  issuer (PUBLIC_URL): ${base}\n`);
    // The webhook secrets' key, unset: made once in DATA_DIR, owner-only, and said so.
    const keyFile = path.join(dataDir, "webhook-secret-encryption-key");
    expect(out).toContain(`| WEBHOOK_SECRET_ENCRYPTION_KEY is unset: using the one in ${keyFile}\n`);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
  });

  it("serves a client_credentials token and /oauth/me, and delivers a webhook to a loopback receiver", {
    timeout: 60_000,
  }, async () => {
    const rpc = { timeoutMs: 10_000, internalToken: TOKEN };
    const organisations = createRpcClient(OrganisationService, {
      baseUrl: `http://127.0.0.1:${ports.ORGANISATION_RPC_PORT}`,
      ...rpc,
    });
    const auth = createRpcClient(AuthService, { baseUrl: `http://127.0.0.1:${ports.AUTH_RPC_PORT}`, ...rpc });
    const { organisation } = await organisations.createOrganisation({
      name: "Distributed Co",
      ownerEmail: `${uniqueName("o")}@example.com`,
      ownerPassword: "correct horse battery",
    });
    const { client, clientSecret } = await auth.createClient({ name: "App", ownerOrganisationId: organisation!.id });

    const tokenRes = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: client!.clientId,
        client_secret: clientSecret,
      }).toString(),
    });
    const token = (await tokenRes.json()) as { access_token: string; token_type: string };
    expect(tokenRes.status, JSON.stringify(token)).toBe(200);
    expect(token.token_type).toBe("Bearer");
    const headers = { authorization: `Bearer ${token.access_token}` };
    const me = await fetch(`${base}/oauth/me`, { headers });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: organisation!.id, name: "Distributed Co" });

    const target = receiver.route("/hook");
    const sub = await fetch(`${base}/oauth/webhooks/subscriptions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ target_url: target.url, event_type: "contact.created" }),
    });
    expect(sub.status, await sub.clone().text()).toBe(201);
    const { contact } = await organisations.createContact({
      organisationId: organisation!.id,
      fields: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.com" },
    });
    const arrived = await waitFor(() => target.requests[0], 30_000, "the webhook POST");
    expect(arrived.headers["webhook-id"]).toBeTruthy();
    expect(arrived.headers["webhook-signature"]).toMatch(/^v1,/);
    const body = JSON.parse(arrived.body) as { type: string; data: { id: string } };
    expect(body.type).toBe("contact.created");
    expect(JSON.stringify(body)).toContain(contact!.id);
  });

  it("walks the authorization-code flow with PKCE across the processes: login, consent, code, /oauth/me", {
    timeout: 60_000,
  }, async () => {
    const rpc = { timeoutMs: 10_000, internalToken: TOKEN };
    const organisations = createRpcClient(OrganisationService, {
      baseUrl: `http://127.0.0.1:${ports.ORGANISATION_RPC_PORT}`,
      ...rpc,
    });
    const auth = createRpcClient(AuthService, { baseUrl: `http://127.0.0.1:${ports.AUTH_RPC_PORT}`, ...rpc });
    const email = `${uniqueName("m")}@example.com`;
    const { organisation } = await organisations.createOrganisation({
      name: "Walk Co",
      ownerEmail: email,
      ownerPassword: "correct horse battery",
    });
    const redirectUri = "http://127.0.0.1:9876/callback";
    const { client } = await auth.createClient({ name: "Walker", redirectUris: [redirectUri], public: true });
    const insecure = { [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(
      new URL(base),
      await oauth.discoveryRequest(new URL(base), { algorithm: "oauth2", ...insecure }),
    );
    const c: oauth.Client = { client_id: client!.clientId };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(as.authorization_endpoint!);
    authorize.search = new URLSearchParams({
      response_type: "code",
      client_id: c.client_id,
      redirect_uri: redirectUri,
      scope: "organisation:read",
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }).toString();

    // A browser that keeps its cookies and follows nothing by itself.
    const { go, submit } = browser(base);
    const submitForm = (html: string, fields: Record<string, string>) =>
      submit(formAction(html), { ...hiddenFields(html), ...fields });
    const started = await go(authorize.href);
    expect(started.status).toBe(303);
    const loggedIn = await submitForm(await (await go(started.headers.get("location")!)).text(), {
      email,
      password: "correct horse battery",
    });
    expect(loggedIn.status).toBe(303);
    const decided = await submitForm(await (await go(loggedIn.headers.get("location")!)).text(), { decision: "allow" });
    expect(decided.status).toBe(303);
    const params = oauth.validateAuthResponse(as, c, new URL(decided.headers.get("location")!), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      c,
      await oauth.authorizationCodeGrantRequest(as, c, oauth.None(), params, redirectUri, verifier, insecure),
    );
    expect(tokens.scope).toBe("organisation:read");
    const me = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: organisation!.id, name: "Walk Co" });
  });

  it("stops every process on SIGTERM, none left", { timeout: 60_000 }, async () => {
    const pids = [...started.output().matchAll(/^start +\| (\w+) is pid (\d+)$/gm)].map((m) => ({
      name: m[1]!,
      pid: Number(m[2]),
    }));
    expect(pids.map((p) => p.name).sort()).toEqual([...NAMES].sort());
    for (const p of pids) expect(alive(p.pid), p.name).toBe(true);
    const code = await started.kill("SIGTERM");
    expect(code, started.output().slice(-3000)).toBe(0);
    for (const p of pids) expect(alive(p.pid), `${p.name} (pid ${p.pid}) is still running`).toBe(false);
    const out = started.output();
    expect(out).toMatch(/^start +\| bizcard platform stopped$/m);
    for (const name of NAMES) expect(out, name).toMatch(new RegExp(`^${name} +\\| .*"msg":"stopped"`, "m"));
  });
});

describe("npm run start:distributed when a process dies", () => {
  it("says which one and stops the others", { timeout: 120_000 }, async () => {
    // Holds the port and hangs up on whoever calls (the start's readiness probe).
    const taken = net.createServer((socket) => socket.destroy());
    const otherPorts = await platformPorts();
    await new Promise<void>((r) => taken.listen(Number(otherPorts.DELIVERY_RPC_PORT), "127.0.0.1", r));
    try {
      const p = npm({
        ...otherPorts,
        DATABASE_URL: db.url,
        DATABASE_POOL_MAX: "2",
        NATS_URL: TEST_NATS_URL,
        NATS_STREAM: STREAM,
        NATS_SUBJECT_PREFIX: PREFIX,
        INTERNAL_RPC_TOKEN: TOKEN,
        DATA_DIR: dataDir,
      });
      expect(await p.exited, p.output().slice(-3000)).toBe(1);
      const out = p.output();
      expect(out).toMatch(/^start +\| delivery exited \(code 1\): stopping the others$/m);
      const pids = [...out.matchAll(/^start +\| (\w+) is pid (\d+)$/gm)].map((m) => Number(m[2]));
      expect(pids).toHaveLength(5);
      for (const pid of pids) expect(alive(pid), `pid ${pid} is still running`).toBe(false);
      expect(out).not.toMatch(/bizcard platform ready/);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });
});

describe("npm run start:distributed without a backend", () => {
  it("names the missing variable in one line and starts nothing", { timeout: 60_000 }, async () => {
    for (const [missing, env] of [
      ["DATABASE_URL", { DATABASE_URL: "", NATS_URL: TEST_NATS_URL }],
      ["NATS_URL", { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/x", NATS_URL: "" }],
    ] as const) {
      const p = npm({ ...env, INTERNAL_RPC_TOKEN: TOKEN });
      expect(await p.exited).toBe(1);
      expect(
        p
          .output()
          .trim()
          .split("\n")
          .filter((l) => !l.startsWith("npm warn")),
      ).toEqual([`configuration error: ${missing}: required when a service runs as its own process (unset)`]);
    }
  });
});
