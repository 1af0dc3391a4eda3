// The gateway's GET /readyz covers what the gateway needs to serve: the auth,
// organisation and webhook services. The delivery service down leaves it
// ready (the OAuth and REST routes work) and is reported in the body.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { createLogger } from "../services/shared/logger.js";
import { startRpcServer, type RunningServer } from "../services/shared/rpc/server.js";
import { testConfig } from "./support/backends.js";
import { freePort } from "./support/processes.js";
import { checkAnswersAgainstDocument } from "./support/openapi-hook.js";

const TOKEN = "y".repeat(40);
const logger = createLogger("readiness", "silent");
const servers: RunningServer[] = [];
const gateways: FastifyInstance[] = [];
let up: Record<"auth" | "organisation" | "webhook" | "delivery", string>;
let closed: string;

/** A service's RPC port whose own /readyz answers 200 (its checks pass). */
const readyService = async (name: string) => {
  const server = await startRpcServer({
    name,
    host: "127.0.0.1",
    port: 0,
    routes: () => {},
    logger,
    internalTokens: [TOKEN],
    readiness: async () => ({ database: "ok", bus: "ok" }),
  });
  servers.push(server);
  return server.url;
};

async function gatewayOver(urls: Record<string, string>): Promise<string> {
  const config = testConfig({ INTERNAL_RPC_TOKEN: TOKEN, AUTH_RPC_URL: urls.auth!, ORGANISATION_RPC_URL: urls.organisation! });
  const gateway = await buildGateway({ clients: createServiceClients(config), serviceUrls: urls, logger });
  gateways.push(gateway);
  checkAnswersAgainstDocument(gateway);
  await gateway.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  up = { auth: await readyService("auth"), organisation: await readyService("organisation"), webhook: await readyService("webhook"), delivery: await readyService("delivery") };
  closed = `http://127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  for (const g of gateways) await g.close();
  for (const s of servers) await s.close();
});

const readyz = async (base: string) => {
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Record<string, unknown> };
};

describe("the gateway's readiness", () => {
  it("is 200 with every service up, each reported", async () => {
    const a = await readyz(await gatewayOver(up));
    expect(a).toMatchObject({ status: 200, body: { status: "ok", services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "ok" } } });
  });

  it("stays 200 with only the delivery service down, and reports it", async () => {
    const a = await readyz(await gatewayOver({ ...up, delivery: closed }));
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ status: "ok", services: { auth: "ok", organisation: "ok", webhook: "ok", delivery: "unavailable" } });
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
