// A database outage, as a client sees it: while the services' PostgreSQL is
// down, the token endpoint, GET /oauth/me and a REST route answer 503
// temporarily_unavailable with Retry-After (in the contract's error shape,
// which is also RFC 6749's), not 500; once it is back, they work again.
// The database is a private server of this file (the shared one is never stopped).
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createAuthApp } from "../services/auth/auth-app.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { createLogger } from "../services/shared/logger.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { createDatabaseOn, testConfig, uniqueName, type TestDatabase } from "./support/backends.js";
import { PostgresServer } from "./support/postgres-server.js";
import { waitFor } from "./support/processes.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";
import { checkAnswersAgainstDocument } from "./support/openapi-hook.js";

const TOKEN = "o".repeat(40);
let postgres: PostgresServer;
let db: TestDatabase;
let bus: EventBus;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let gateway: FastifyInstance;
let base: string;
let client: { id: string; secret: string };

beforeAll(async () => {
  postgres = await PostgresServer.start();
  db = { ...(await createDatabaseOn(postgres.url, uniqueName("outage"))), poolMax: 4 };
  const baseConfig = testConfig({ INTERNAL_RPC_TOKEN: TOKEN, RPC_TIMEOUT_MS: "3000" });
  bus = await openTestBus(baseConfig);
  organisation = await startService(createOrganisationApp, { config: baseConfig, db, bus });
  const config = testConfig({
    INTERNAL_RPC_TOKEN: TOKEN,
    RPC_TIMEOUT_MS: "3000",
    NATS_STREAM: baseConfig.NATS_STREAM,
    NATS_SUBJECT_PREFIX: baseConfig.NATS_SUBJECT_PREFIX,
    ORGANISATION_RPC_URL: organisation.server.url,
  });
  auth = await startService(createAuthApp, { config, db, bus });
  gateway = await buildGateway({
    clients: createServiceClients({ ...config, authRpcUrl: auth.server.url }),
    serviceUrls: { auth: auth.server.url, organisation: organisation.server.url },
    logger: createLogger("gateway-outage", "silent"),
  });
  checkAnswersAgainstDocument(gateway);
  await gateway.listen({ port: 0, host: "127.0.0.1" });
  base = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
  const org = await organisation.client(OrganisationService).createOrganisation({ name: "Outage", ownerEmail: "owner@outage.test", ownerPassword: "password-o" });
  const created = await auth.client(AuthService).createClient({ name: "Outage sync", ownerOrganisationId: org.organisation!.id });
  client = { id: created.client!.clientId, secret: created.clientSecret };
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await auth?.stop();
  await organisation?.stop();
  await bus?.close();
  await postgres?.stop();
});

const token = () =>
  fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: client.id, client_secret: client.secret }).toString(),
  });

const accessToken = async () => {
  const res = await token();
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
};

const get = (path: string, bearer: string) => fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });

async function expectUnavailable(res: Response): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(body)).toBe(503);
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
  expect(Object.keys(body).sort()).toEqual(["error", "error_description"]);
  expect(body.error).toBe("temporarily_unavailable");
}

describe("with the database down", () => {
  it("answers 503 temporarily_unavailable with Retry-After, and serves again once it is back", async () => {
    // One token already used (its check cached by the gateway), one never shown to the gateway.
    const used = await accessToken();
    const listed = await get("/oauth/contacts", used);
    expect(listed.status, await listed.text()).toBe(200);
    const fresh = await accessToken();

    await postgres.halt();
    await expectUnavailable(await token());
    await expectUnavailable(await get("/oauth/me", fresh));
    await expectUnavailable(await get("/oauth/contacts", used));

    await postgres.restart();
    await waitFor(async () => ((await token()).status === 200 ? true : undefined), 20_000, "token endpoint after restart");
    expect((await get("/oauth/me", fresh)).status).toBe(200);
    expect((await get("/oauth/contacts", used)).status).toBe(200);
  }, 60_000);
});
