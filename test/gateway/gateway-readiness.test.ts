// The gateway's GET /readyz covers what the gateway needs to serve: the auth,
// organisation and webhook services. The delivery service down leaves it
// ready (the OAuth and REST routes work) and is reported in the body.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";
import { freePort } from "../support/processes.js";

let platform: Platform;
let up: Record<"auth" | "organisation" | "webhook" | "delivery", string>;
let closed: string;

/** A gateway in front of the platform's services, whose readiness it asks at `urls`. */
const gatewayOver = async (urls: Record<string, string>) => (await platform.addGateway({ serviceUrls: urls })).base;

beforeAll(async () => {
  // Every service of the platform, each of whose own /readyz answers 200 (its checks pass).
  platform = await startPlatform({ auth: true, webhook: true, delivery: true });
  up = {
    auth: platform.auth.server.url,
    organisation: platform.organisation.server.url,
    webhook: platform.webhook.server.url,
    delivery: platform.delivery.server.url,
  };
  closed = `http://127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await platform?.stop();
});

const readyz = async (base: string) => {
  const res = await fetch(`${base}/readyz`);
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as Record<string, unknown>,
  };
};

describe("the gateway's readiness", () => {
  it("is 200 with every service up, each reported", async () => {
    const a = await readyz(await gatewayOver(up));
    expect(a).toMatchObject({
      status: 200,
      body: { status: "ok", services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "ok" } },
    });
  });

  it("stays 200 with only the delivery service down, and reports it", async () => {
    const a = await readyz(await gatewayOver({ ...up, delivery: closed }));
    expect(a.status).toBe(200);
    expect(a.body).toEqual({
      status: "ok",
      services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "unavailable" },
    });
  });

  for (const name of ["auth", "organisation", "webhook"] as const) {
    it(`is 503 naming ${name} when ${name} is down`, async () => {
      const a = await readyz(await gatewayOver({ ...up, [name]: closed }));
      expect(a.status).toBe(503);
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
      expect(a.body).toEqual({ error: "temporarily_unavailable", error_description: `not ready: ${name}` });
    });
  }
});
