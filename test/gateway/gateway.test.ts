// The REST gateway as a client sees it, over real HTTP, in front of the real
// auth and organisation services: malformed HTTP, health and readiness,
// routing errors and the request id. Every error has the one body shape,
// never HTML, never a stack trace. (Timeouts and the drain, and POST
// /oauth/token's checks: the other gateway-*.test.ts files.)
import net from "node:net";
import { describe, expect, it } from "vitest";
import {
  base,
  brokenBase,
  call,
  expectClean,
  expectError,
  expectRawError,
  FORM,
  JSON_TYPE,
  parseRaw,
  rawExchange,
  token,
  useGatewaySuite,
  UUID,
} from "../support/gateway-suite.js";

useGatewaySuite();

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
      expectError(
        await call(path, { headers: { "x-request-id": "bad-path" } }),
        400,
        "invalid_request",
        /percent-encoded/,
      );
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

describe("health and readiness", () => {
  it("GET /healthz is 200 while the process is up", async () => {
    const a = await call("/healthz");
    expectClean(a);
    expect(a.status).toBe(200);
    expect(a.headers.get("content-type")).toMatch(/^application\/json/);
    expect(a.headers.get("cache-control")).toBe("no-store");
    // The version (and, where known, the commit) tells an operator what runs.
    expect(a.body).toMatchObject({ status: "ok", version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
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
      ["/oauth", { method: "DELETE" }],
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
    const allow = post.headers
      .get("allow")!
      .split(",")
      .map((m) => m.trim());
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
    for (const garbage of [
      "x".repeat(300),
      "x".repeat(129),
      "has spaces in it",
      "<script>alert(1)</script>",
      "a/b",
      "id;drop",
    ]) {
      const a = await call("/healthz", { headers: { "x-request-id": garbage } });
      expect(a.status).toBe(200);
      const echoed = a.headers.get("x-request-id");
      expect(echoed).toMatch(UUID);
      expect(echoed).not.toBe(garbage);
    }
  });

  it("is on error answers too, including ones the body parser makes", async () => {
    const big = await token(`a=${"x".repeat(70 * 1024)}`, FORM, { "x-request-id": "big-one" });
    expect(big.status).toBe(413);
    expect(big.headers.get("x-request-id")).toBe("big-one");
    const media = await token("grant_type=x", "text/plain", { "x-request-id": "media-one" });
    expect(media.status).toBe(415);
    expect(media.headers.get("x-request-id")).toBe("media-one");
  });
});
