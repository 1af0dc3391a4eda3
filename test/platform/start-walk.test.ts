// `npm start` exactly as a person runs it (the compiled code it runs, not the
// TypeScript the other suites import), walked as a client and as a browser
// would: every GET route of its OpenAPI document with a real token and real
// ids, and every page and asset the landing and docs pages link to. Nothing
// answers 500. Then as another process on the machine would see it: the
// platform listens on TCP only on its configured ports, and its embedded
// database only on a Unix socket in an owner-only folder. A second start
// beside it says the platform is already running.
import { readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  httpReady,
  platformPids,
  platformPorts,
  runBizcard,
  spawnProcess,
  type Spawned,
} from "../support/processes.js";

let dataDir: string;
let env: Record<string, string>;
let platform: Spawned | undefined;
let base: string;
let receiver: Server;
let token: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "bizcard-walk-"));
  receiver = createServer((_req, res) => res.writeHead(204).end());
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  env = {
    DATABASE_URL: "",
    NATS_URL: "",
    INTERNAL_RPC_TOKEN: "",
    DATA_DIR: dataDir,
    // The walk subscribes a loopback receiver, so that the subscription routes have a real id.
    WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
    ...(await platformPorts()),
    LOG_LEVEL: "warn",
  };
  base = `http://127.0.0.1:${env.GATEWAY_PORT}`;
  platform = spawnProcess("npm", ["start", "--silent"], env);
  await httpReady(`${base}/readyz`, 150_000, platform);
  // A client the demo organisation owns, as the README's walk makes one: a token with every scope.
  const demo = JSON.parse(readFileSync(path.join(dataDir, "demo-credentials.json"), "utf8"));
  const made = await runBizcard(
    ["client", "create", "--name", "Walk", "--owner-org", demo.organisation.id, "--json"],
    env,
  );
  expect(made.code, made.stderr).toBe(0);
  const client = JSON.parse(made.stdout) as { client_id: string; client_secret: string };
  const res = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials" }),
  });
  expect(res.status).toBe(200);
  token = ((await res.json()) as { access_token: string }).access_token;
}, 180_000);

afterAll(async () => {
  if (platform && platform.child.exitCode === null) process.kill(-platform.child.pid!, "SIGTERM");
  await platform?.exited;
  await new Promise((resolve) => receiver?.close(resolve));
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface Operation {
  parameters?: { name: string; in: string; required?: boolean }[];
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(new URL(url, base), { headers, redirect: "manual" });
}

describe("npm start, walked", () => {
  it("answers every GET route of its OpenAPI document without a server error", async () => {
    const doc = (await (await get("/openapi.json")).json()) as { paths: Record<string, { get?: Operation }> };
    const created = await fetch(`${base}/oauth/webhooks/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        target_url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`,
        event_type: "contact.created",
      }),
    });
    expect(created.status).toBe(201);
    const subscription = (await created.json()) as { id: string };
    const demo = JSON.parse(readFileSync(path.join(dataDir, "demo-credentials.json"), "utf8"));
    const query: Record<string, string> = {
      response_type: "code",
      client_id: demo.client.client_id,
      redirect_uri: demo.client.redirect_uris[0],
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGzSW8YTQc",
      code_challenge_method: "S256",
    };
    const walked: string[] = [];
    for (const [template, item] of Object.entries(doc.paths)) {
      if (!item.get) continue;
      const pathname = template.replace("{id}", subscription.id);
      const required = (item.get.parameters ?? []).filter((p) => p.in === "query" && p.required).map((p) => p.name);
      const search = new URLSearchParams(required.map((name): [string, string] => [name, query[name]!]));
      for (const name of Object.keys(query))
        if (!search.has(name) && template === "/oauth/authorize") search.set(name, query[name]!);
      const url = search.size > 0 ? `${pathname}?${search}` : pathname;
      const res = await get(url, { authorization: `Bearer ${token}` });
      const body = await res.text();
      // Each answers as documented for a client that may call it: a 200, or the authorization endpoint's 303.
      expect(res.status, `GET ${url}: ${body.slice(0, 300)}`).toBe(template === "/oauth/authorize" ? 303 : 200);
      walked.push(template);
    }
    expect(walked).toEqual(
      expect.arrayContaining(["/openapi.yaml", "/oauth/me", "/oauth/webhooks/subscriptions/{id}/deliveries"]),
    );
    const yaml = await get("/openapi.yaml");
    expect(yaml.headers.get("content-type")).toMatch(/yaml/);
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0$/m);
  }, 60_000);

  it("serves every page and asset the landing and docs pages lead to, and the sign-in pages", async () => {
    const seen = new Map<string, number>();
    const queue = ["/", "/docs", "/account/login"];
    while (queue.length > 0 && seen.size < 100) {
      const next = queue.shift()!;
      if (seen.has(next)) continue;
      const res = await get(next);
      seen.set(next, res.status);
      const location = res.headers.get("location");
      if (location?.startsWith("/")) queue.push(location);
      if (!/html/.test(res.headers.get("content-type") ?? "")) continue;
      for (const [, link] of (await res.text()).matchAll(/(?:href|src)="(\/[^"#]*)"/g)) {
        const pathname = link!.replaceAll("&amp;", "&");
        // The API's own routes were walked with a token above; the pages' links to them need one.
        if (!pathname.startsWith("/oauth/") || pathname.startsWith("/oauth/interaction/")) queue.push(pathname);
      }
    }
    const failed = [...seen].filter(([, status]) => status >= 500);
    expect(failed).toEqual([]);
    expect([...seen.keys()].some((p) => p.startsWith("/oauth/interaction/"))).toBe(true);
    expect(seen.get("/")).toBe(200);
    expect(seen.get("/docs")).toBe(200);
    expect(seen.size).toBeGreaterThan(4);
  }, 60_000);

  it("listens on TCP only on its configured ports, its database on an owner-only Unix socket", () => {
    const pid = platformPids(platform!)[0]!;
    const expected = [
      "GATEWAY_PORT",
      "GATEWAY_METRICS_PORT",
      "AUTH_RPC_PORT",
      "ORGANISATION_RPC_PORT",
      "WEBHOOK_RPC_PORT",
      "DELIVERY_RPC_PORT",
    ];
    expect(listeningTcpPorts(pid).sort()).toEqual(expected.map((name) => Number(env[name])).sort());
    const sockets = unixSocketsUnder(pid, dataDir);
    expect(sockets).toHaveLength(1);
    expect(statSync(sockets[0]!).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(sockets[0]!)).mode & 0o777).toBe(0o700);
  });

  it("names in its banner the development settings that are on", () => {
    expect(platform!.output()).toMatch(
      /development settings on:\n\s+WEBHOOK_ALLOW_INSECURE_TARGETS=true\s+http, loopback and private webhook targets \(never in production\)\n/,
    );
    expect(platform!.output()).not.toContain("OAUTH_DYNAMIC_REGISTRATION=true");
  });

  it("a second npm start says the platform is already running, and where; the first keeps serving", async () => {
    const second = spawnProcess("npm", ["start", "--silent"], env);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(
      new RegExp(`^bizcard: the platform is already running: its gateway answers at ${base} \\(version [^)]+\\)\\. `),
    );
    expect(second.output()).not.toContain("is already in use");
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 120_000);
});

/** The socket inodes a process holds open. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return "";
      }
    })();
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match) inodes.add(match[1]!);
  }
  return inodes;
}

/** The local ports of the listening TCP sockets (IPv4 and IPv6) a process holds. */
function listeningTcpPorts(pid: number): number[] {
  const inodes = socketInodes(pid);
  const ports: number[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").trim().split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // st 0A: LISTEN; field 9 the socket's inode.
      if (fields[3] === "0A" && inodes.has(fields[9]!)) ports.push(parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

/** The paths of the listening Unix sockets a process holds under `dir`. */
function unixSocketsUnder(pid: number, dir: string): string[] {
  const inodes = socketInodes(pid);
  const paths: string[] = [];
  for (const line of readFileSync("/proc/net/unix", "utf8").trim().split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    // Flags 00010000: __SO_ACCEPTCON, a listening socket; field 6 the inode, 7 the path.
    if (fields[3] === "00010000" && inodes.has(fields[6]!) && fields[7]?.startsWith(dir)) paths.push(fields[7]);
  }
  return paths;
}
