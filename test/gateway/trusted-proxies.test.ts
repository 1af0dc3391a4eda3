// The client address the gateway logs (and rate limits will use): the peer's
// own, unless the peer is one of GATEWAY_TRUSTED_PROXIES, in which case the
// address it forwards in X-Forwarded-For.
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../services/shared/config.js";
import type { Logger } from "../../services/shared/logger.js";
import { startPlatform, type Platform } from "../support/platform.js";

let platform: Platform;

beforeAll(async () => {
  // Gateways alone (each test adds its own): no service of the platform is started.
  platform = await startPlatform({ organisation: false });
});

afterAll(async () => {
  await platform?.stop();
});

function capture(): { logger: Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      out.push(String(chunk));
      done();
    },
  });
  return {
    logger: pino({ level: "info" }, stream),
    lines: () =>
      out
        .join("")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
  };
}

async function clientAddressSeen(
  trustedProxies: string[],
  remoteAddress: string,
  forwardedFor?: string,
): Promise<unknown> {
  const { logger, lines } = capture();
  const gateway = await platform.addGateway({ serviceUrls: {}, logger, trustedProxies });
  try {
    const res = await gateway.app.inject({
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
    await gateway.close();
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
