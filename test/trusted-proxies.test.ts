// The client address the gateway logs (and rate limits will use): the peer's
// own, unless the peer is one of GATEWAY_TRUSTED_PROXIES, in which case the
// address it forwards in X-Forwarded-For.
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { ConfigError, loadConfig } from "../services/shared/config.js";
import type { Logger } from "../services/shared/logger.js";
import { testConfig } from "./support/backends.js";

function capture(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines: () => out.join("").trim().split("\n").map((l) => JSON.parse(l)) };
}

async function clientAddressSeen(trustedProxies: string[], remoteAddress: string, forwardedFor?: string): Promise<unknown> {
  const { logger, lines } = capture();
  const config = testConfig();
  const app = await buildGateway({ clients: createServiceClients(config), serviceUrls: {}, logger, trustedProxies });
  try {
    const res = await app.inject({
      method: "GET",
      url: "/healthz",
      remoteAddress,
      headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {},
    });
    expect(res.statusCode).toBe(200);
    const line = lines().find((l) => l.msg === "request");
    expect(line, "one request log line").toBeDefined();
    return line!.client;
  } finally {
    await app.close();
  }
}

describe("trusted proxies", () => {
  it("by default believes no X-Forwarded-For: the client is the peer", async () => {
    expect(await clientAddressSeen([], "198.51.100.9", "203.0.113.7")).toBe("198.51.100.9");
  });

  it("believes X-Forwarded-For from a listed proxy address or range", async () => {
    expect(await clientAddressSeen(["10.0.0.0/8"], "10.1.2.3", "203.0.113.7")).toBe("203.0.113.7");
    expect(await clientAddressSeen(["127.0.0.1"], "127.0.0.1", "203.0.113.8")).toBe("203.0.113.8");
  });

  it("ignores X-Forwarded-For from a peer that is not listed", async () => {
    expect(await clientAddressSeen(["10.0.0.0/8"], "198.51.100.9", "203.0.113.7")).toBe("198.51.100.9");
  });

  it("reads GATEWAY_TRUSTED_PROXIES as a list and refuses what is not an address or range", () => {
    expect(loadConfig({ GATEWAY_TRUSTED_PROXIES: " 10.0.0.0/8, ::1 ,192.0.2.1" }).GATEWAY_TRUSTED_PROXIES).toEqual([
      "10.0.0.0/8",
      "::1",
      "192.0.2.1",
    ]);
    expect(loadConfig({}).GATEWAY_TRUSTED_PROXIES).toEqual([]);
    for (const bad of ["2", "10.0.0.0/33", "proxy.example", "10.0.0.1/8/1", "::1/129"]) {
      expect(() => loadConfig({ GATEWAY_TRUSTED_PROXIES: bad }), bad).toThrow(ConfigError);
    }
  });
});
