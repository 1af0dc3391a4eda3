// The REST gateway as a client sees it, over real HTTP, in front of the real
// auth and organisation services: health and readiness, routing errors, the
// request id, and every check POST /oauth/token makes before it hands a grant
// to the auth service. Every error has the one body shape, never HTML, never
// a stack trace.
import net, { type AddressInfo } from "node:net";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { createAuthApp } from "../services/auth/auth-app.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import type { Config } from "../services/shared/config.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { createLogger } from "../services/shared/logger.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { freePort, waitFor } from "./support/processes.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";

const TOKEN = "g".repeat(40);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";

let db: TestDatabase;
let bus: EventBus;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let gateway: FastifyInstance;
let broken: FastifyInstance;
let misconfigured: FastifyInstance;
let base: string;
let brokenBase: string;
let misconfiguredBase: string;

/** One stream and subject prefix for every config of this file. */
const baseConfig = testConfig({ INTERNAL_RPC_TOKEN: TOKEN });
const configWith = (overrides: Record<string, string>): Config =>
  testConfig({
    INTERNAL_RPC_TOKEN: TOKEN,
    NATS_STREAM: baseConfig.NATS_STREAM,
    NATS_SUBJECT_PREFIX: baseConfig.NATS_SUBJECT_PREFIX,
    ...overrides,
  });

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await openTestBus(baseConfig);
  organisation = await startService(createOrganisationApp, { config: baseConfig, db, bus });
  const authConfig = configWith({ ORGANISATION_RPC_URL: organisation.server.url });
  auth = await startService(createAuthApp, { config: authConfig, db, bus });
  const config = configWith({ ORGANISATION_RPC_URL: organisation.server.url, AUTH_RPC_URL: auth.server.url });
  const logger = createLogger("gateway-test", config.LOG_LEVEL);

  gateway = await buildGateway({
    clients: createServiceClients(config),
    serviceUrls: { auth: auth.server.url, organisation: organisation.server.url },
    logger,
  });
  base = await listen(gateway);

  // A second gateway whose auth service is on a port where nothing listens.
  const closed = `http://127.0.0.1:${await freePort()}`;
  const brokenConfig = configWith({ ORGANISATION_RPC_URL: organisation.server.url, AUTH_RPC_URL: closed });
  broken = await buildGateway({
    clients: createServiceClients(brokenConfig),
    serviceUrls: { auth: closed, organisation: organisation.server.url },
    logger,
  });
  brokenBase = await listen(broken);

  // A third gateway that presents the wrong internal credential.
  const wrongConfig = testConfig({
    INTERNAL_RPC_TOKEN: "w".repeat(40),
    ORGANISATION_RPC_URL: organisation.server.url,
    AUTH_RPC_URL: auth.server.url,
  });
  misconfigured = await buildGateway({
    clients: createServiceClients(wrongConfig),
    serviceUrls: { auth: auth.server.url, organisation: organisation.server.url },
    logger,
  });
  misconfiguredBase = await listen(misconfigured);
});

describe("malformed HTTP", () => {
  const raw = (request: string) =>
    new Promise<string>((resolve) => {
      const url = new URL(base);
      const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
      let data = "";
      socket.on("data", (d) => (data += d));
      socket.on("close", () => resolve(data));
      socket.on("error", () => resolve(data));
    });

  it("answers in the one error shape even before any route is reached", async () => {
    const garbage = await raw("GARBAGE\r\n\r\n");
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(garbage).toContain("Content-Type: application/json");
    expect(JSON.parse(garbage.slice(garbage.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "invalid_request",
      error_description: "the request is not valid HTTP",
    });
    expect(parseRaw(garbage).headers["x-request-id"]).toMatch(UUID);
    const huge = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(huge.slice(huge.indexOf("\r\n\r\n") + 4)).error).toBe("invalid_request");
    expectRawError(parseRaw(huge), 431, "invalid_request");
  });

  it("a path that is not valid percent-encoding is 400 in the one shape", async () => {
    for (const path of ["/%zz", "/oauth/%E0%A4%A", "/nope/%"]) {
      expectError(await call(path, { headers: { "x-request-id": "bad-path" } }), 400, "invalid_request", /percent-encoded/);
    }
  });

  it("an HTTP/1.1 request without Host, or with two, is 400 in the one shape (RFC 9112 §3.2)", async () => {
    const none = await rawExchange(base, "GET /healthz HTTP/1.1\r\nX-Request-Id: no-host\r\n\r\n");
    expectRawError(none, 400, "invalid_request", "no-host");
    expect(none!.body).toEqual({ error: "invalid_request", error_description: expect.stringMatching(/Host/) });
    const two = await rawExchange(base, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
    expectRawError(two, 400, "invalid_request");
    // HTTP/1.0 has no Host requirement.
    expect((await rawExchange(base, "GET /healthz HTTP/1.0\r\n\r\n"))?.status).toBe(200);
  });

  it("an Expect other than 100-continue is 417 in the one shape (RFC 9110 §10.1.1)", async () => {
    for (const path of ["/oauth/token", "/nope"]) {
      const a = await rawExchange(
        base,
        `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: expect-1\r\nExpect: 999-nope\r\nContent-Type: ${FORM}\r\nContent-Length: 12\r\n\r\n`,
      );
      expectRawError(a, 417, "expectation_failed", "expect-1");
    }
    // 100-continue itself is met: the client is told to go on, then answered.
    const ok = await rawExchange(
      base,
      `POST /oauth/token HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: ${FORM}\r\nContent-Length: 12\r\n\r\n`,
      { after100: "grant_type=x" },
    );
    expectRawError(ok, 400, "unsupported_grant_type");
  });
});

describe("timeouts and the drain", () => {
  const logger = createLogger("gateway-test", baseConfig.LOG_LEVEL);
  let quick: FastifyInstance;
  let quickBase: string;

  beforeAll(async () => {
    quick = await buildGateway({ clients: createServiceClients(baseConfig), serviceUrls: {}, logger, timeouts: { requestMs: 1000 } });
    quickBase = await listen(quick);
  });
  afterAll(async () => {
    await quick?.close();
  });

  const STALLED = `POST /oauth/token HTTP/1.1\r\nHost: x\r\nX-Request-Id: stalled-1\r\nContent-Length: 100\r\nContent-Type: ${FORM}\r\n\r\ngrant_type=x`;

  it("a body that stops arriving is answered 408 in the one shape, with its request id, and the connection closed", async () => {
    const a = await rawExchange(quickBase, STALLED);
    expectRawError(a, 408, "request_timeout", "stalled-1");
    expect(a!.headers.connection).toBe("close");
    expect(a!.closed).toBe(true);
  });

  it("a head that stops arriving is answered 408 in the one shape", async () => {
    const a = await rawExchange(quickBase, "POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Len");
    expectRawError(a, 408, "request_timeout");
    expect(a!.closed).toBe(true);
  });

  it("close() serves a request already received, closing its connection after the answer", async () => {
    // An auth service that takes the call and never answers: the request waits in its handler.
    const calls: net.Socket[] = [];
    const hold = net.createServer((socket) => calls.push(socket));
    await new Promise<void>((resolve) => hold.listen(0, "127.0.0.1", () => resolve()));
    const holdUrl = `http://127.0.0.1:${(hold.address() as AddressInfo).port}`;
    const config = configWith({ AUTH_RPC_URL: holdUrl, RPC_TIMEOUT_MS: "1500" });
    const busy = await buildGateway({ clients: createServiceClients(config), serviceUrls: {}, logger });
    const busyBase = await listen(busy);
    try {
      const answer = call(
        "/oauth/token",
        { method: "POST", headers: { "content-type": FORM }, body: form({ grant_type: "client_credentials", client_id: "c", client_secret: "s" }) },
        busyBase,
      );
      await waitFor(() => (calls.length > 0 ? true : undefined), 30_000, "the gateway's call to the auth service");
      const closed = busy.close();
      const a = await answer;
      // The auth service never answered: the deadline made it 503, and the answer was still written.
      expectError(a, 503, "temporarily_unavailable");
      expect(a.headers.get("connection")).toBe("close");
      await closed;
    } finally {
      for (const socket of calls) socket.destroy();
      hold.close();
    }
  });

  it("close() does not wait for a stalled body: the client gets 503 in the one shape, and close() returns", async () => {
    const slow = await buildGateway({ clients: createServiceClients(baseConfig), serviceUrls: {}, logger, timeouts: { requestMs: 600_000 } });
    const slowBase = await listen(slow);
    const received = new Promise((resolve) => slow.server.once("request", resolve));
    const answer = rawExchange(slowBase, STALLED);
    await received;
    // An idle keep-alive connection is not waited for either.
    const idle = net.connect(Number(new URL(slowBase).port), "127.0.0.1");
    await new Promise((resolve) => idle.once("connect", resolve));
    const idleClosed = new Promise((resolve) => idle.once("close", resolve));
    await slow.close();
    const a = await answer;
    expectRawError(a, 503, "temporarily_unavailable", "stalled-1");
    expect(Number(a!.headers["retry-after"])).toBeGreaterThan(0);
    await idleClosed;
  });
});

describe("a gateway whose internal credential is refused", () => {
  it("answers 500 server_error without internals: the server's fault, not the client's", async () => {
    const a = await call(
      "/oauth/token",
      { method: "POST", headers: { "content-type": FORM }, body: "grant_type=client_credentials&client_id=c&client_secret=s" },
      misconfiguredBase,
    );
    expectError(a, 500, "server_error");
    expect(a.text).not.toContain("internal credential");
    expect(a.headers.get("www-authenticate")).toBeNull();
  });
});

afterAll(async () => {
  await misconfigured?.close();
  await broken?.close();
  await gateway?.close();
  await auth?.stop();
  await organisation?.stop();
  await bus?.close();
  await db?.drop();
});

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

async function call(path: string, init: RequestInit = {}, at = base): Promise<Answer> {
  const res = await fetch(`${at}${path}`, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: unknown;
  /** The server closed the connection after this answer. */
  closed: boolean;
}

function parseRaw(data: string, closed = true): RawAnswer {
  const end = data.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = data.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
  const text = data.slice(end + 4);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine!.split(" ")[1]), headers, text, body, closed };
}

/**
 * One exchange over a raw socket, for what fetch cannot send: the first final
 * answer (after an optional 100 Continue), once complete or once the server
 * closes; undefined when the server closed without a word.
 */
function rawExchange(at: string, request: string | Buffer, options: { after100?: string } = {}): Promise<RawAnswer | undefined> {
  return new Promise((resolve) => {
    const url = new URL(at);
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
    let data = "";
    const done = (closed: boolean) => {
      socket.destroy();
      resolve(data.includes("\r\n\r\n") ? parseRaw(data, closed) : undefined);
    };
    socket.on("data", (d) => {
      data += d;
      if (/^HTTP\/1\.1 100 /.test(data) && data.includes("\r\n\r\n")) {
        data = data.slice(data.indexOf("\r\n\r\n") + 4);
        if (options.after100 !== undefined) socket.write(options.after100);
      }
      const end = data.indexOf("\r\n\r\n");
      const length = end < 0 ? undefined : /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end + 2))?.[1];
      if (length !== undefined && Buffer.byteLength(data.slice(end + 4)) >= Number(length)) {
        // Complete: did the server also close? Give it the chance to say so.
        socket.once("end", () => done(true));
        setImmediate(() => socket.readableEnded || socket.destroyed || /\r\nconnection: *close/i.test(data) ? undefined : done(false));
      }
    });
    socket.on("close", () => done(true));
    socket.on("error", () => done(true));
  });
}

/** A raw answer in the one error shape, with a request id (the given one when the client sent it). */
function expectRawError(a: RawAnswer | undefined, status: number, error: string, requestId?: string): void {
  expect(a, "an answer").toBeDefined();
  expect(a!.status, a!.text).toBe(status);
  expect(a!.headers["content-type"]).toMatch(/^application\/json/);
  expect(a!.headers["x-content-type-options"]).toBe("nosniff");
  expect(a!.body).toEqual({ error, error_description: expect.any(String) });
  expect(a!.headers["x-request-id"]).toMatch(requestId === undefined ? UUID : new RegExp(`^${requestId}$`));
}

/** Nothing a client reads ever carries HTML or a stack frame. */
function expectClean(a: Answer): void {
  expect(a.text.toLowerCase()).not.toContain("<html");
  expect(a.text.toLowerCase()).not.toContain("<!doctype");
  expect(a.text).not.toMatch(/\bat .+[:(]\d+/);
  expect(a.text).not.toMatch(/\.(ts|js):\d+/);
  expect(a.text).not.toContain("node_modules");
  expect(a.text).not.toMatch(/FST_ERR/);
}

/** An error in the one shape: status, JSON content type, exactly {error, error_description}. */
function expectError(a: Answer, status: number, error: string, description?: RegExp): void {
  expectClean(a);
  expect(a.status, a.text).toBe(status);
  expect(a.headers.get("content-type")).toMatch(/^application\/json/);
  expect(a.headers.get("x-content-type-options")).toBe("nosniff");
  expect(a.body).toEqual({ error, error_description: expect.any(String) });
  const desc = (a.body as { error_description: string }).error_description;
  expect(desc.length).toBeGreaterThan(0);
  if (description) expect(desc).toMatch(description);
  expect(a.headers.get("x-request-id")).toBeTruthy();
}

function expectNoStore(a: Answer): void {
  expect(a.headers.get("cache-control")).toBe("no-store");
}

const form = (fields: [string, string][] | Record<string, string>) =>
  new URLSearchParams(Array.isArray(fields) ? fields : Object.entries(fields)).toString();

/** POST /oauth/token with a raw body and content type. */
function token(body: string | undefined, contentType: string | undefined, headers: Record<string, string> = {}): Promise<Answer> {
  return call("/oauth/token", {
    method: "POST",
    headers: { ...(contentType ? { "content-type": contentType } : {}), ...headers },
    body,
  });
}

/** The same parameters sent form-encoded and as JSON. */
const encodings = [
  { name: "form", send: (p: Record<string, string>, h?: Record<string, string>) => token(form(p), FORM, h) },
  { name: "JSON", send: (p: Record<string, string>, h?: Record<string, string>) => token(JSON.stringify(p), JSON_TYPE, h) },
];

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

describe("health and readiness", () => {
  it("GET /healthz is 200 while the process is up", async () => {
    const a = await call("/healthz");
    expectClean(a);
    expect(a.status).toBe(200);
    expect(a.headers.get("content-type")).toMatch(/^application\/json/);
    expect(a.headers.get("cache-control")).toBe("no-store");
    expect(a.body).toEqual({ status: "ok" });
  });

  it("GET /readyz is 200 and names every service it checked", async () => {
    const a = await call("/readyz");
    expectClean(a);
    expect(a.status, a.text).toBe(200);
    expect(a.headers.get("cache-control")).toBe("no-store");
    expect(a.body).toEqual({ status: "ok", services: { auth: "ok", organisation: "ok" } });
  });

  it("GET /readyz is 503 temporarily_unavailable naming the service that does not answer", async () => {
    const a = await call("/readyz", {}, brokenBase);
    expectError(a, 503, "temporarily_unavailable", /\bauth\b/);
    const desc = (a.body as { error_description: string }).error_description;
    expect(desc).not.toMatch(/organisation/);
    expect(desc).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
    expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(a.headers.get("cache-control")).toBe("no-store");
    // The broken gateway is itself alive.
    expect((await call("/healthz", {}, brokenBase)).status).toBe(200);
  });
});

describe("routing errors", () => {
  it("an unknown path is 404 JSON, never HTML, whatever the client accepts", async () => {
    for (const [path, init] of [
      ["/nope", {}],
      ["/oauth/nope?x=1", { headers: { accept: "text/html" } }],
      ["/healthz/", {}],
      ["/", { method: "DELETE" }],
      ["/nope", { method: "POST", headers: { "content-type": JSON_TYPE }, body: "{}" }],
    ] as [string, RequestInit][]) {
      const a = await call(path, init);
      expectError(a, 404, "not_found");
    }
  });

  it("a known path with another method is 405 with Allow", async () => {
    const get = await call("/oauth/token");
    expectError(get, 405, "method_not_allowed");
    expect(get.headers.get("allow")).toBe("POST");

    const del = await call("/oauth/token", { method: "DELETE" });
    expectError(del, 405, "method_not_allowed");
    expect(del.headers.get("allow")).toBe("POST");

    const post = await call("/healthz", { method: "POST", headers: { "content-type": JSON_TYPE }, body: "{}" });
    expectError(post, 405, "method_not_allowed");
    const allow = post.headers.get("allow")!.split(",").map((m) => m.trim());
    expect(allow).toContain("GET");
    expect(allow).not.toContain("POST");

    const put = await call("/readyz", { method: "PUT" });
    expectError(put, 405, "method_not_allowed");
    expect(put.headers.get("allow")).toMatch(/\bGET\b/);
  });
});

describe("x-request-id", () => {
  it("echoes a sane id the client sends", async () => {
    const id = "req-123.abc:XYZ_9";
    for (const path of ["/healthz", "/nope", "/oauth/token"]) {
      const a = await call(path, { headers: { "x-request-id": id } });
      expect(a.headers.get("x-request-id")).toBe(id);
    }
  });

  it("makes a UUID when the client sends none, a new one per request", async () => {
    const a = await call("/healthz");
    const b = await call("/healthz");
    expect(a.headers.get("x-request-id")).toMatch(UUID);
    expect(b.headers.get("x-request-id")).toMatch(UUID);
    expect(a.headers.get("x-request-id")).not.toBe(b.headers.get("x-request-id"));
  });

  it("replaces a garbage id with a UUID", async () => {
    for (const garbage of ["x".repeat(300), "x".repeat(129), "has spaces in it", "<script>alert(1)</script>", "a/b", "id;drop"]) {
      const a = await call("/healthz", { headers: { "x-request-id": garbage } });
      expect(a.status).toBe(200);
      const echoed = a.headers.get("x-request-id");
      expect(echoed).toMatch(UUID);
      expect(echoed).not.toBe(garbage);
    }
  });

  it("is on error answers too, including ones the body parser makes", async () => {
    const big = await token("a=" + "x".repeat(70 * 1024), FORM, { "x-request-id": "big-one" });
    expect(big.status).toBe(413);
    expect(big.headers.get("x-request-id")).toBe("big-one");
    const media = await token("grant_type=x", "text/plain", { "x-request-id": "media-one" });
    expect(media.status).toBe(415);
    expect(media.headers.get("x-request-id")).toBe("media-one");
  });
});

describe("POST /oauth/token: the body", () => {
  it("refuses a body over 64 KiB with 413 payload_too_large", async () => {
    const formBody = form({ grant_type: "client_credentials", client_id: "c", client_secret: "s", pad: "x".repeat(64 * 1024) });
    const a = await token(formBody, FORM);
    expectError(a, 413, "payload_too_large", /64 KiB/);
    expectNoStore(a);

    const jsonBody = JSON.stringify({ grant_type: "client_credentials", pad: "x".repeat(64 * 1024) });
    const b = await token(jsonBody, JSON_TYPE);
    expectError(b, 413, "payload_too_large");
    expectNoStore(b);
  });

  it("refuses an oversize body sent chunked, without a Content-Length", async () => {
    const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode("grant_type=client_credentials&pad="));
        if (sent >= 8) return controller.close();
        sent++;
        controller.enqueue(chunk);
      },
    });
    const a = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": FORM },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expectError(a, 413, "payload_too_large");
    expectNoStore(a);
  });

  it("accepts a body just under the limit as far as the parameter checks", async () => {
    const body = form({ grant_type: "password", pad: "x".repeat(60 * 1024) });
    const a = await token(body, FORM);
    expectError(a, 400, "unsupported_grant_type");
  });

  it("refuses other media types with 415", async () => {
    for (const type of ["text/plain", "application/xml", "text/xml", "multipart/form-data; boundary=x", "application/octet-stream"]) {
      const a = await token("grant_type=client_credentials", type);
      expectError(a, 415, "unsupported_media_type", /application\/json|x-www-form-urlencoded/);
      expectNoStore(a);
    }
  });

  it("refuses a body without a content type with 415", async () => {
    const res = await fetch(`${base}/oauth/token`, {
      method: "POST",
      body: new Blob(["grant_type=client_credentials"]), // a Blob without a type: fetch sends no Content-Type
    });
    const text = await res.text();
    const a: Answer = { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
    expect(a.headers.get("content-type")).toMatch(/^application\/json/);
    expectError(a, 415, "unsupported_media_type");
    expectNoStore(a);
  });

  it("accepts the content types with parameters (charset)", async () => {
    const a = await token(form({ grant_type: "nope" }), `${FORM}; charset=UTF-8`);
    expectError(a, 400, "unsupported_grant_type");
    const b = await token(JSON.stringify({ grant_type: "nope" }), `${JSON_TYPE}; charset=utf-8`);
    expectError(b, 400, "unsupported_grant_type");
  });

  it("refuses malformed JSON with 400 invalid_request", async () => {
    for (const body of ['{"grant_type": "client_credentials"', "{grant_type: 1}", "not json", '{"a":1}}']) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
      // The parser's own words (positions, token names) stay inside.
      expect((a.body as { error_description: string }).error_description).not.toMatch(/position|Unexpected token/);
    }
  });

  it("refuses an empty JSON body with 400 invalid_request", async () => {
    const a = await token("", JSON_TYPE);
    expectError(a, 400, "invalid_request");
    expectNoStore(a);
  });

  it("refuses a JSON body that is not an object of parameters with 400 invalid_request", async () => {
    for (const body of ['["grant_type", "client_credentials"]', '[{"grant_type": "client_credentials"}]', '"client_credentials"', "42", "true"]) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
    }
  });

  it("refuses JSON parameters that are not strings with 400 invalid_request", async () => {
    for (const body of [
      { grant_type: ["client_credentials", "refresh_token"] },
      { grant_type: { nested: "x" } },
      { grant_type: "client_credentials", client_id: 42 },
      { grant_type: "client_credentials", client_id: "c", client_secret: true },
    ]) {
      const a = await token(JSON.stringify(body), JSON_TYPE);
      expectError(a, 400, "invalid_request");
      expectNoStore(a);
    }
  });
});

describe("POST /oauth/token: parameters", () => {
  for (const enc of encodings) {
    describe(`sent as ${enc.name}`, () => {
      it("without grant_type is 400 invalid_request", async () => {
        const a = await enc.send({ client_id: "c", client_secret: "s" });
        expectError(a, 400, "invalid_request", /grant_type/);
        expectNoStore(a);
      });

      it("with an empty grant_type is treated as without (RFC 6749 §3.1)", async () => {
        const a = await enc.send({ grant_type: "", client_id: "c", client_secret: "s" });
        expectError(a, 400, "invalid_request", /grant_type/);
      });

      it("with an unknown grant_type is 400 unsupported_grant_type", async () => {
        for (const grant of ["password", "implicit", "urn:ietf:params:oauth:grant-type:device_code", "CLIENT_CREDENTIALS"]) {
          const a = await enc.send({ grant_type: grant, client_id: "c", client_secret: "s" });
          expectError(a, 400, "unsupported_grant_type", /authorization_code/);
          expectNoStore(a);
        }
      });

      it("with Basic and client_secret in the body is 400 invalid_request", async () => {
        const a = await enc.send(
          { grant_type: "client_credentials", client_secret: "s" },
          { authorization: basic("c", "s") },
        );
        expectError(a, 400, "invalid_request", /one client authentication method/);
        expectNoStore(a);
        expect(a.headers.get("www-authenticate")).toBeNull();
      });

      it("with Basic and a different client_id in the body is 400 invalid_request", async () => {
        const a = await enc.send({ grant_type: "client_credentials", client_id: "other" }, { authorization: basic("c", "s") });
        expectError(a, 400, "invalid_request", /client_id/);
        expectNoStore(a);
      });

      it("with client_secret but no client_id is 400 invalid_request", async () => {
        const a = await enc.send({ grant_type: "client_credentials", client_secret: "s" });
        expectError(a, 400, "invalid_request", /client_id/);
        expectNoStore(a);
      });

      it("without any client credentials is 401 invalid_client with WWW-Authenticate", async () => {
        for (const grant of ["client_credentials", "authorization_code", "refresh_token"]) {
          const a = await enc.send({ grant_type: grant });
          expectError(a, 401, "invalid_client");
          expectNoStore(a);
          expect(a.headers.get("www-authenticate")).toMatch(/^Basic realm="[^"]+"/);
        }
      });

      it("with malformed Basic credentials is 401 invalid_client with WWW-Authenticate", async () => {
        const a = await enc.send(
          { grant_type: "client_credentials" },
          { authorization: `Basic ${Buffer.from("no-colon").toString("base64")}` },
        );
        expectError(a, 401, "invalid_client");
        expectNoStore(a);
        expect(a.headers.get("www-authenticate")).toMatch(/^Basic /);
      });

      it("with well-formed parameters reaches the auth service, which refuses an unknown client (401 invalid_client)", async () => {
        // The auth service's own description: the gateway passed the request on.
        const post = await enc.send({ grant_type: "client_credentials", client_id: "c", client_secret: "s" });
        expectError(post, 401, "invalid_client", /client authentication failed/);
        expectNoStore(post);
        expect(post.headers.get("www-authenticate")).toMatch(/^Basic realm="[^"]+"/);
        const viaBasic = await enc.send({ grant_type: "refresh_token", refresh_token: "r" }, { authorization: basic("c", "s") });
        expectError(viaBasic, 401, "invalid_client", /client authentication failed/);
        expectNoStore(viaBasic);
        const publicClient = await enc.send({ grant_type: "authorization_code", client_id: "c", code: "x", redirect_uri: "https://a.test/cb" });
        expectError(publicClient, 401, "invalid_client", /client authentication failed/);
        expectNoStore(publicClient);
      });
    });
  }

  it("an auth service that cannot be reached is 503 temporarily_unavailable with Retry-After, without internals", async () => {
    const a = await call(
      "/oauth/token",
      { method: "POST", headers: { "content-type": FORM }, body: form({ grant_type: "client_credentials", client_id: "c", client_secret: "s" }) },
      brokenBase,
    );
    expectError(a, 503, "temporarily_unavailable");
    expectNoStore(a);
    expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(a.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|\[unavailable\]/);
    // The checks the gateway makes itself still answer as usual (grant_type is the auth service's).
    expectError(await call("/oauth/token", { method: "POST", headers: { "content-type": FORM }, body: "grant_type=x&grant_type=y" }, brokenBase), 400, "invalid_request");
  });

  it("a parameter repeated in a form body is 400 invalid_request", async () => {
    const a = await token("grant_type=a&grant_type=b", FORM);
    expectError(a, 400, "invalid_request", /grant_type/);
    expectNoStore(a);
    const same = await token("grant_type=client_credentials&grant_type=client_credentials&client_id=c&client_secret=s", FORM);
    expectError(same, 400, "invalid_request", /grant_type/);
    const secret = await token(form([["grant_type", "client_credentials"], ["client_id", "c"], ["client_secret", "s"], ["client_secret", "t"]]), FORM);
    expectError(secret, 400, "invalid_request", /client_secret/);
  });

  it("an empty form body is 400 invalid_request", async () => {
    const a = await token("", FORM);
    expectError(a, 400, "invalid_request", /grant_type/);
    expectNoStore(a);
  });

  it("Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1)", async () => {
    // "c%3Aid" decodes to "c:id", so a body client_id of "c:id" is the same client: no mismatch, on to the service.
    const a = await token(form({ grant_type: "client_credentials", client_id: "c:id" }), FORM, { authorization: basic("c%3Aid", "s%20t") });
    expectError(a, 401, "invalid_client", /client authentication failed/);
    const bad = await token(form({ grant_type: "client_credentials" }), FORM, { authorization: basic("c%zz", "s") });
    expectError(bad, 401, "invalid_client");
    expect(bad.headers.get("www-authenticate")).toMatch(/^Basic /);
  });
});

describe("bodies the gateway does not read", () => {
  it("a body sent to an unknown route is 404 (405 on a known path), whatever the body", async () => {
    const bodies: [string, RequestInit][] = [
      ["malformed JSON", { method: "POST", headers: { "content-type": JSON_TYPE }, body: "{{{" }],
      ["over 64 KiB", { method: "POST", headers: { "content-type": FORM }, body: `a=${"x".repeat(70 * 1024)}` }],
      ["another media type", { method: "PUT", headers: { "content-type": "application/xml" }, body: "<a/>" }],
      ["gzip", { method: "POST", headers: { "content-type": JSON_TYPE, "content-encoding": "gzip" }, body: "{}" }],
      ["not UTF-8", { method: "POST", headers: { "content-type": FORM }, body: Buffer.from([0x61, 0x3d, 0xff]) }],
    ];
    for (const [what, init] of bodies) {
      expectError(await call("/nope", init), 404, "not_found", undefined);
      const known = await call("/healthz", init);
      expect(known.status, what).toBe(405);
      expectError(known, 405, "method_not_allowed");
    }
  });

  it("a Content-Encoding other than identity is 415 with Accept-Encoding: identity (RFC 9110 §15.5.16)", async () => {
    for (const coding of ["gzip", "br", "deflate", "identity, gzip"]) {
      for (const enc of encodings) {
        const a = await enc.send({ grant_type: "client_credentials" }, { "content-encoding": coding });
        expectError(a, 415, "unsupported_media_type", /Content-Encoding/);
        expect(a.headers.get("accept-encoding")).toBe("identity");
        expectNoStore(a);
      }
    }
    // identity is no coding at all.
    expectError(await token(form({ grant_type: "nope" }), FORM, { "content-encoding": "identity" }), 400, "unsupported_grant_type");
  });
});

describe("POST /oauth/token: strict parameters", () => {
  it("a JSON name repeated is 400 invalid_request naming it, like a repeated form field", async () => {
    for (const [body, name] of [
      ['{"grant_type":"client_credentials","grant_type":"refresh_token"}', "grant_type"],
      ['{"grant_type":"client_credentials","client_id":"c","client_secret":"s","client_secret":"t"}', "client_secret"],
      // The same name, spelt with an escape: still the same name.
      ['{"grant_type":"client_credentials","grant\\u005ftype":"client_credentials"}', "grant_type"],
      // At any depth, after empty objects and arrays, and past strings holding quotes and backslashes.
      ['{"grant_type":"client_credentials","x":[{"a":1,"a":2}]}', "a"],
      ['{"x":{},"y":[],"grant_type":"a\\"\\\\","grant_type":"b"}', "grant_type"],
      ['{"client_id":"[{\\"","x":[["client_id"]],"client_id":"c"}', "client_id"],
    ] as const) {
      const a = await token(body, JSON_TYPE);
      expectError(a, 400, "invalid_request", new RegExp(`\\b${name}\\b.*more than once`));
      expectNoStore(a);
    }
    // The same names in different objects are not repeats (the parameter checks come next).
    expectError(await token('{"grant_type":"nope","x":{"grant_type":1}}', JSON_TYPE), 400, "invalid_request", /parameter x must be a string/);
  });

  it("a body that is not UTF-8 is 400 invalid_request that says so", async () => {
    const notUtf8 = [
      [FORM, Buffer.concat([Buffer.from("grant_type=client_credentials&client_id="), Buffer.from([0xc3, 0x28])])],
      [JSON_TYPE, Buffer.concat([Buffer.from('{"grant_type":"client_credentials","client_id":"'), Buffer.from([0xff]), Buffer.from('"}')])],
      // An overlong encoding of "/" and a lone surrogate half.
      [JSON_TYPE, Buffer.concat([Buffer.from('{"grant_type":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])],
      [FORM, Buffer.concat([Buffer.from("grant_type="), Buffer.from([0xed, 0xa0, 0x80])])],
    ] as const;
    for (const [type, body] of notUtf8) {
      const a = await call("/oauth/token", { method: "POST", headers: { "content-type": type }, body });
      expectError(a, 400, "invalid_request", /UTF-8/);
      expectNoStore(a);
    }
    // Percent-encoded bytes of a form must decode to UTF-8 too.
    expectError(await token("grant_type=client_credentials&client_id=%FF", FORM), 400, "invalid_request", /UTF-8/);
    expectError(await token("grant_type=client_credentials&client_id=%zz", FORM), 400, "invalid_request", /percent-encoding/);
    // UTF-8 itself is read as such, raw or percent-encoded.
    expectError(await token(form({ grant_type: "Grüße" }), FORM), 400, "unsupported_grant_type");
    expectError(await token(JSON.stringify({ grant_type: "Grüße" }), JSON_TYPE), 400, "unsupported_grant_type");
  });
});

describe("logs", () => {
  it("the request id is logged under requestId, like the services' lines", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _encoding, next) {
        for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
        next();
      },
    });
    const gw = await buildGateway({ clients: createServiceClients(baseConfig), serviceUrls: {}, logger: pino({ level: "info" }, sink) });
    try {
      await gw.inject({ method: "GET", url: "/nope", headers: { "x-request-id": "log-me-1" } });
      await gw.inject({ method: "POST", url: "/oauth/token", headers: { "x-request-id": "log-me-2", "content-type": JSON_TYPE }, payload: "{" });
    } finally {
      await gw.close();
    }
    for (const id of ["log-me-1", "log-me-2"]) {
      const mine = lines.filter((l) => l.requestId === id);
      expect(mine.length, JSON.stringify(lines)).toBeGreaterThan(0);
    }
    expect(lines.some((l) => "reqId" in l)).toBe(false);
  });
});
