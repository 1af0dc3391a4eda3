// U+0000 and lone surrogates in any string a client sends, as a client sees
// the gateway answer: 400 invalid_request (in the one JSON shape, or as a page
// on the page routes), and nothing done. Over real HTTP in front of the real
// auth, organisation and webhook services on PostgreSQL and the bus.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createAuthApp } from "../services/auth/auth-app.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import type { Config } from "../services/shared/config.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { createLogger } from "../services/shared/logger.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { createWebhookApp } from "../services/webhook/webhook-app.js";
import { apiCaller, expectError, type AppClient } from "./support/api-client.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { freePort } from "./support/processes.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";
import { checkAnswersAgainstDocument } from "./support/openapi-hook.js";

const TOKEN = "n".repeat(40);
const SUBSCRIPTIONS = "/oauth/webhooks/subscriptions";
const REDIRECT = "https://client.example/cb";
const MEMBER = { email: "owner@nul.test", password: "password-nul" };

let db: TestDatabase;
let bus: EventBus;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let webhook: StartedService<ServiceApp>;
let gateway: FastifyInstance;
let base: string;
let app: AppClient;
let publicClientId: string;

const { tokenOf, call } = apiCaller(() => base);

beforeAll(async () => {
  const baseConfig = testConfig({ INTERNAL_RPC_TOKEN: TOKEN });
  const configWith = (overrides: Record<string, string>): Config =>
    testConfig({ INTERNAL_RPC_TOKEN: TOKEN, NATS_STREAM: baseConfig.NATS_STREAM, NATS_SUBJECT_PREFIX: baseConfig.NATS_SUBJECT_PREFIX, ...overrides });
  db = await createTestDatabase();
  bus = await openTestBus(baseConfig);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  organisation = await startService(createOrganisationApp, { config: baseConfig, db, bus });
  auth = await startService(createAuthApp, { config: configWith({ ORGANISATION_RPC_URL: organisation.server.url, PUBLIC_URL: base }), db, bus });
  webhook = await startService(createWebhookApp, { config: configWith({ WEBHOOK_ALLOW_INSECURE_TARGETS: "true" }), db, bus });
  const config = configWith({
    ORGANISATION_RPC_URL: organisation.server.url,
    AUTH_RPC_URL: auth.server.url,
    WEBHOOK_RPC_URL: webhook.server.url,
    PUBLIC_URL: base,
  });
  gateway = await buildGateway({
    clients: createServiceClients(config),
    serviceUrls: {},
    logger: createLogger("gateway", config.LOG_LEVEL),
    bus,
    publicUrl: base,
  });
  checkAnswersAgainstDocument(gateway);
  await gateway.listen({ port, host: "127.0.0.1" });
  expect((gateway.server.address() as AddressInfo).port).toBe(port);

  const orgId = (await organisation.client(OrganisationService).createOrganisation({ name: "Nul Cards", ownerEmail: MEMBER.email, ownerPassword: MEMBER.password }))
    .organisation!.id;
  const clients = auth.client(AuthService);
  const made = await clients.createClient({ name: "Nul App", ownerOrganisationId: orgId, redirectUris: [REDIRECT], scopes: [] });
  app = { id: made.client!.clientId, secret: made.clientSecret };
  publicClientId = (await clients.createClient({ name: "Nul Public", redirectUris: [REDIRECT], public: true, scopes: [] })).client!.clientId;
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await webhook?.stop();
  await auth?.stop();
  await organisation?.stop();
  await bus?.close();
  await db?.drop();
});

const NUL = "\u0000";
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const JSON_TYPE = { "content-type": "application/json" };
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`, "utf8").toString("base64")}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

function send(method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}${path}`, { method, redirect: "manual", headers, body });
}

/** The page routes' refusal: a 400 page (HTML), never a redirect or a 500. */
async function expectPage400(res: Response): Promise<void> {
  const text = await res.text();
  expect(res.status, text).toBe(400);
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(res.headers.get("x-request-id")).toBeTruthy();
  expect(text).toContain("This request cannot be completed");
}

function authorizeQuery(overrides: Record<string, string>): string {
  return `/oauth/authorize?${form({ response_type: "code", client_id: publicClientId, redirect_uri: REDIRECT, state: "s", code_challenge: "x".repeat(43), code_challenge_method: "S256", ...overrides })}`;
}

/** A fresh interaction (its page path) and its login form's CSRF token. */
async function interaction(): Promise<{ path: string; csrf: string }> {
  const start = await send("GET", authorizeQuery({}));
  expect(start.status).toBe(303);
  const path = start.headers.get("location")!;
  const page = await send("GET", path);
  const csrf = /name="csrf_token" value="([^"]*)"/.exec(await page.text())![1]!;
  return { path, csrf };
}

/** Signs the member in on a fresh interaction: its path, CSRF token and the session cookie. */
async function signedIn(): Promise<{ path: string; csrf: string; cookie: string; id: string }> {
  const { path, csrf } = await interaction();
  const res = await send("POST", `${path}/login`, form({ csrf_token: csrf, email: MEMBER.email, password: MEMBER.password }), FORM);
  expect(res.status).toBe(303);
  const cookie = res.headers.getSetCookie()[0]!.split(";")[0]!;
  const consent = await send("GET", path, undefined, { cookie });
  const html = await consent.text();
  expect(consent.status, html).toBe(200);
  return { path, cookie, id: decodeURIComponent(path.split("/").pop()!), csrf: /name="csrf_token" value="([^"]*)"/.exec(html)![1]! };
}

describe("the OAuth endpoints (JSON answers)", () => {
  it("/oauth/token: U+0000 or a lone surrogate in any parameter, form, JSON or Basic, is 400 invalid_request and issues nothing", async () => {
    const cases: [string, string | undefined, Record<string, string>][] = [
      ["form client_id", form({ grant_type: "client_credentials", client_id: `${app.id}${NUL}`, client_secret: app.secret }), FORM],
      ["form client_id alone", form({ grant_type: "client_credentials", client_id: NUL }), FORM],
      ["form client_secret", form({ grant_type: "client_credentials", client_id: app.id, client_secret: `${app.secret}${NUL}` }), FORM],
      ["form scope", form({ grant_type: "client_credentials", client_id: app.id, client_secret: app.secret, scope: NUL }), FORM],
      ["form code", form({ grant_type: "authorization_code", client_id: publicClientId, code: NUL, redirect_uri: REDIRECT, code_verifier: "v".repeat(43) }), FORM],
      ["form refresh_token", form({ grant_type: "refresh_token", client_id: publicClientId, refresh_token: `r${NUL}` }), FORM],
      ["form parameter name", `grant_type=client_credentials&client_id=${app.id}&client_secret=${app.secret}&x%00=1`, FORM],
      ["Basic client_id", form({ grant_type: "client_credentials" }), { ...FORM, authorization: basic(`${app.id}%00`, app.secret) }],
      ["Basic client_id raw", form({ grant_type: "client_credentials" }), { ...FORM, authorization: basic(`${app.id}${NUL}`, app.secret) }],
      ["Basic secret", form({ grant_type: "client_credentials" }), { ...FORM, authorization: basic(app.id, `${app.secret}%00`) }],
      ["JSON client_id", `{"grant_type":"client_credentials","client_id":"${app.id}\\u0000","client_secret":"${app.secret}"}`, JSON_TYPE],
      ["JSON lone surrogate", `{"grant_type":"client_credentials","client_id":"\\ud800","client_secret":"${app.secret}"}`, JSON_TYPE],
      ["JSON low surrogate", `{"grant_type":"client_credentials","client_id":"${app.id}","client_secret":"\\udc00x"}`, JSON_TYPE],
    ];
    for (const [name, body, headers] of cases) {
      const res = await send("POST", "/oauth/token", body, headers);
      expect(res.headers.get("cache-control"), name).toBe("no-store");
      await expectError(res, 400, "invalid_request", /U\+0000|surrogate|not valid/);
    }
    // The same client, asked properly, still gets its token.
    expect(await tokenOf(app)).toBeTruthy();
  });

  it("/oauth/revoke and /oauth/introspect: the token parameter and the client's credentials", async () => {
    const token = await tokenOf(app);
    for (const path of ["/oauth/revoke", "/oauth/introspect"]) {
      const cases: [string, Record<string, string>][] = [
        [form({ token: `${token}${NUL}`, client_id: app.id, client_secret: app.secret }), FORM],
        [form({ token, client_id: `${NUL}`, client_secret: app.secret }), FORM],
        [form({ token, token_type_hint: NUL }), { ...FORM, authorization: basic(app.id, app.secret) }],
        [form({ token }), { ...FORM, authorization: basic(`${app.id}%00`, app.secret) }],
        [`{"token":"\\ud83d","client_id":"${app.id}","client_secret":"${app.secret}"}`, JSON_TYPE],
      ];
      for (const [body, headers] of cases) await expectError(await send("POST", path, body, headers), 400, "invalid_request");
    }
    // Nothing was revoked: the token still works.
    const me = await call(app, "GET", "/oauth/me");
    expect(me.status).toBe(200);
  });

  it("the JSON consent: client_id, interaction_id, state (also nested or as a name) are 400 invalid_request", async () => {
    const { cookie, id, csrf, path } = await signedIn();
    const fields = { decision: "allow", interaction_id: id, csrf_token: csrf, response_type: "code", client_id: publicClientId, redirect_uri: REDIRECT };
    const bodies = [
      JSON.stringify({ ...fields, client_id: `${publicClientId}${NUL}` }),
      JSON.stringify({ ...fields, interaction_id: `${id}${NUL}` }),
      JSON.stringify({ ...fields, state: `s${NUL}` }),
      JSON.stringify({ ...fields, client_id: "\ud800" }),
      JSON.stringify({ ...fields, [`x${NUL}`]: "1" }),
      JSON.stringify({ ...fields, extra: { deep: ["ok", { deeper: `${NUL}` }] } }),
    ];
    for (const body of bodies) {
      const res = await send("POST", "/oauth/authorize/consent", body, { ...JSON_TYPE, cookie });
      await expectError(res, 400, "invalid_request");
    }
    // The interaction is still waiting for its consent.
    const page = await send("GET", path, undefined, { cookie });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('name="decision"');
  });
});

describe("the pages (400 pages)", () => {
  it("the authorization request's query: state, client_id, redirect_uri, scope", async () => {
    for (const name of ["state", "client_id", "redirect_uri", "scope", "code_challenge"]) {
      await expectPage400(await send("GET", authorizeQuery({ [name]: `a${NUL}` })));
    }
    await expectPage400(await send("GET", `${authorizeQuery({})}&x%00=1`));
  });

  it("the login form: email, password, csrf_token, and the interaction id in the path", async () => {
    const { path, csrf } = await interaction();
    for (const fields of [
      { csrf_token: csrf, email: `${MEMBER.email}${NUL}`, password: MEMBER.password },
      { csrf_token: csrf, email: NUL, password: "x" },
      { csrf_token: csrf, email: MEMBER.email, password: `${MEMBER.password}${NUL}` },
      { csrf_token: `${csrf}${NUL}`, email: MEMBER.email, password: MEMBER.password },
    ]) {
      const res = await send("POST", `${path}/login`, form(fields), FORM);
      expect(res.headers.get("set-cookie")).toBeNull();
      await expectPage400(res);
    }
    await expectPage400(await send("POST", `${path}%00/login`, form({ csrf_token: csrf, email: MEMBER.email, password: MEMBER.password }), FORM));
    await expectPage400(await send("GET", `${path}%00`));
    await expectPage400(await send("GET", "/oauth/interaction/%00"));
    // Not signed in by any of them: the login page still shows.
    const page = await send("GET", path);
    expect(await page.text()).toContain('name="password"');
  });

  it("the consent form: interaction_id and client_id", async () => {
    const { cookie, id, csrf } = await signedIn();
    const fields = { decision: "allow", interaction_id: id, csrf_token: csrf, response_type: "code", client_id: publicClientId, redirect_uri: REDIRECT };
    await expectPage400(await send("POST", "/oauth/authorize/consent", form({ ...fields, interaction_id: `${id}${NUL}` }), { ...FORM, cookie }));
    await expectPage400(await send("POST", "/oauth/authorize/consent", form({ ...fields, client_id: NUL }), { ...FORM, cookie }));
  });

  it("the account pages: the revoke form's client_id", async () => {
    const { cookie, csrf } = await signedIn();
    await expectPage400(await send("POST", "/account/applications/revoke", form({ client_id: `${app.id}${NUL}`, csrf_token: csrf }), { ...FORM, cookie }));
    await expectPage400(await send("GET", `/account/applications?notice=${encodeURIComponent(NUL)}`, undefined, { cookie }));
  });
});

describe("the REST API", () => {
  it("subscriptions: a target_url with a lone surrogate or U+0000 is refused, not stored as U+FFFD; ids and queries too", async () => {
    const list = async () => (await (await call(app, "GET", `${SUBSCRIPTIONS}?limit=100`)).json()) as unknown[];
    const before = await list();
    const bodies = [
      '{"target_url":"http://hooks.example.test/\\ud800","event_type":"contact.created"}',
      '{"target_url":"http://hooks.example.test/\\udfff\\ud800","event_type":"contact.created"}',
      '{"target_url":"http://hooks.example.test/a\\u0000","event_type":"contact.created"}',
      '{"target_url":"http://hooks.example.test/ok","event_type":"contact.created\\u0000"}',
      '{"target_url":"http://hooks.example.test/ok","event_type":"contact.created","extra":["\\ud800"]}',
    ];
    for (const body of bodies) await expectError(await call(app, "POST", SUBSCRIPTIONS, body), 400, "invalid_request");
    expect(await list()).toEqual(before);

    const created = await call(app, "POST", SUBSCRIPTIONS, { target_url: "http://hooks.example.test/kept", event_type: "contact.created" });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };
    await expectError(await call(app, "PUT", `${SUBSCRIPTIONS}/${id}`, '{"target_url":"http://hooks.example.test/\\ud800"}'), 400, "invalid_request");
    const kept = (await (await call(app, "GET", `${SUBSCRIPTIONS}/${id}`)).json()) as { target_url: string };
    expect(kept.target_url).toBe("http://hooks.example.test/kept");

    await expectError(await call(app, "GET", `${SUBSCRIPTIONS}/%00`), 400, "invalid_request");
    await expectError(await call(app, "DELETE", `${SUBSCRIPTIONS}/${id}%00`), 400, "invalid_request");
    await expectError(await call(app, "GET", `${SUBSCRIPTIONS}/${id}/deliveries?cursor=%00`), 400, "invalid_request");
    await expectError(await call(app, "POST", `${SUBSCRIPTIONS}/${id}/deliveries/%00/retry`), 400, "invalid_request");
    await expectError(await call(app, "GET", `${SUBSCRIPTIONS}?cursor=a%00`), 400, "invalid_request");
    await expectError(await call(app, "GET", `/oauth/contacts?cursor=%00`), 400, "invalid_request");
    // The query is percent-encoded UTF-8, as a form body is: %ED%A0%80 (a surrogate's bytes) is not.
    await expectError(await call(app, "GET", `${SUBSCRIPTIONS}?cursor=%ED%A0%80`), 400, "invalid_request");
    expect((await call(app, "GET", `${SUBSCRIPTIONS}/${id}`)).status).toBe(200);
  });
});
