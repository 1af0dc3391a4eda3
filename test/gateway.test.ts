// The REST gateway as a client sees it, over real HTTP, in front of the real
// auth and organisation services: health and readiness, routing errors, the
// request id, and every check POST /oauth/token makes before it hands a grant
// to the auth service. Every error has the one body shape, never HTML, never
// a stack trace.
import net, { type AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
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
import { freePort } from "./support/processes.js";
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
    const huge = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(huge.slice(huge.indexOf("\r\n\r\n") + 4)).error).toBe("invalid_request");
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

      it("with well-formed parameters reaches the auth service, whose grants are not available yet (501)", async () => {
        const post = await enc.send({ grant_type: "client_credentials", client_id: "c", client_secret: "s" });
        expectError(post, 501, "not_implemented");
        expectNoStore(post);
        const viaBasic = await enc.send({ grant_type: "refresh_token", refresh_token: "r" }, { authorization: basic("c", "s") });
        expectError(viaBasic, 501, "not_implemented");
        expectNoStore(viaBasic);
        const publicClient = await enc.send({ grant_type: "authorization_code", client_id: "c", code: "x", redirect_uri: "https://a.test/cb" });
        expectError(publicClient, 501, "not_implemented");
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
    // The checks the gateway makes itself still answer as usual.
    expectError(await call("/oauth/token", { method: "POST", headers: { "content-type": FORM }, body: "grant_type=x" }, brokenBase), 400, "unsupported_grant_type");
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
    expectError(a, 501, "not_implemented");
    const bad = await token(form({ grant_type: "client_credentials" }), FORM, { authorization: basic("c%zz", "s") });
    expectError(bad, 401, "invalid_client");
    expect(bad.headers.get("www-authenticate")).toMatch(/^Basic /);
  });
});
