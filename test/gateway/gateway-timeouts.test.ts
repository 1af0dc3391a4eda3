// The gateway's timeouts and its drain on close(), a gateway whose internal
// credential is refused, and its log lines.
import net, { type AddressInfo } from "node:net";
import { Writable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway, createServiceClients } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import {
  baseConfig,
  call,
  configWith,
  expectError,
  expectRawError,
  FORM,
  form,
  JSON_TYPE,
  listen,
  logger,
  misconfiguredBase,
  rawExchange,
  useGatewaySuite,
} from "../support/gateway-suite.js";

useGatewaySuite();

describe("timeouts and the drain", () => {
  let quick: FastifyInstance;
  let quickBase: string;

  beforeAll(async () => {
    quick = await buildGateway({
      clients: createServiceClients(baseConfig),
      serviceUrls: {},
      logger,
      timeouts: { requestMs: 1000 },
    });
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
        {
          method: "POST",
          headers: { "content-type": FORM },
          body: form({ grant_type: "client_credentials", client_id: "c", client_secret: "s" }),
        },
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
    const slow = await buildGateway({
      clients: createServiceClients(baseConfig),
      serviceUrls: {},
      logger,
      timeouts: { requestMs: 600_000 },
    });
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
      {
        method: "POST",
        headers: { "content-type": FORM },
        body: "grant_type=client_credentials&client_id=c&client_secret=s",
      },
      misconfiguredBase,
    );
    expectError(a, 500, "server_error");
    expect(a.text).not.toContain("internal credential");
    expect(a.headers.get("www-authenticate")).toBeNull();
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
    const gw = await buildGateway({
      clients: createServiceClients(baseConfig),
      serviceUrls: {},
      logger: pino({ level: "info" }, sink),
    });
    try {
      await gw.inject({ method: "GET", url: "/nope", headers: { "x-request-id": "log-me-1" } });
      await gw.inject({
        method: "POST",
        url: "/oauth/token",
        headers: { "x-request-id": "log-me-2", "content-type": JSON_TYPE },
        payload: "{",
      });
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
