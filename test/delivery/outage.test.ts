// A database outage, as a client sees it: while the services' PostgreSQL is
// down, the token endpoint, GET /oauth/me and a REST route answer 503
// temporarily_unavailable with Retry-After (in the contract's error shape,
// which is also RFC 6749's), not 500; once it is back, they work again.
// The database is a private server of this file (the shared one is never stopped).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../services/shared/logger.js";
import { createDatabaseOn, uniqueName } from "../support/backends.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { PostgresServer } from "../support/postgres-server.js";
import { waitFor } from "../support/processes.js";

let postgres: PostgresServer;
let platform: Platform;
let base: string;
let client: { id: string; secret: string };

beforeAll(async () => {
  postgres = await PostgresServer.start();
  // The services' database is on the private server (the platform leaves it to this file).
  const db = { ...(await createDatabaseOn(postgres.url, uniqueName("outage"))), poolMax: 4 };
  platform = await startPlatform({
    token: "o".repeat(40),
    config: { RPC_TIMEOUT_MS: "3000" },
    db,
    auth: true,
    gateway: { logger: createLogger("gateway-outage", "silent") },
    member: { organisation: "Outage", email: "owner@outage.test", password: "password-o" },
  });
  base = platform.base;
  const created = await platform.createClient("Outage sync", [], { ownerOrganisationId: platform.organisationId });
  client = { id: created.clientId, secret: created.clientSecret };
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await postgres?.stop();
});

const token = () =>
  fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: client.id,
      client_secret: client.secret,
    }).toString(),
  });

const accessToken = async () => {
  const res = await token();
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
};

const get = (path: string, bearer: string) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${bearer}` } });

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
    await waitFor(
      async () => ((await token()).status === 200 ? true : undefined),
      20_000,
      "token endpoint after restart",
    );
    expect((await get("/oauth/me", fresh)).status).toBe(200);
    expect((await get("/oauth/contacts", used)).status).toBe(200);
  }, 60_000);
});
