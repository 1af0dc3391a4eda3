// U+0000 and lone surrogates in any string a client sends, as a client sees
// the gateway answer: 400 invalid_request (in the one JSON shape, or as a page
// on the page routes), and nothing done. Over real HTTP in front of the real
// auth, organisation and webhook services on PostgreSQL and the bus.
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiCaller, expectError, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";

const SUBSCRIPTIONS = "/oauth/webhooks/subscriptions";
const REDIRECT = "https://client.example/cb";
const MEMBER = { email: "owner@nul.test", password: "password-nul" };

let platform: Platform;
let base: string;
let app: AppClient;
let publicClientId: string;

const { tokenOf, call } = apiCaller(() => base);

beforeAll(async () => {
  platform = await startPlatform({
    token: "n".repeat(40),
    auth: true,
    webhook: { config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true" } },
    // PUBLIC_URL is the gateway's own address; the bus carries revocations to it.
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
    member: { organisation: "Nul Cards", ...MEMBER },
  });
  base = platform.base;
  expect((platform.gateway.server.address() as AddressInfo).port).toBe(Number(new URL(base).port));

  const made = await platform.createClient("Nul App", [REDIRECT], { ownerOrganisationId: platform.organisationId });
  app = { id: made.clientId, secret: made.clientSecret };
  publicClientId = (await platform.createClient("Nul Public", [REDIRECT], { public: true })).clientId;
}, 60_000);

afterAll(async () => {
  await platform?.stop();
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

/** A fresh interaction (its page path), its login form's CSRF and form tokens, and the browser's form cookie. */
async function interaction(): Promise<{ path: string; csrf: string; formToken: string; formCookie: string }> {
  const start = await send("GET", authorizeQuery({}));
  expect(start.status).toBe(303);
  const path = start.headers.get("location")!;
  const page = await send("GET", path);
  const formCookie = page.headers.getSetCookie()[0]!.split(";")[0]!;
  const html = await page.text();
  const csrf = /name="csrf_token" value="([^"]*)"/.exec(html)![1]!;
  return { path, csrf, formToken: /name="form_token" value="([^"]*)"/.exec(html)![1]!, formCookie };
}

/** Signs the member in on a fresh interaction: its path, CSRF and form tokens, and the browser's cookies. */
async function signedIn(): Promise<{ path: string; csrf: string; formToken: string; cookie: string; id: string }> {
  const { path, csrf, formToken, formCookie } = await interaction();
  const fields = { csrf_token: csrf, form_token: formToken, email: MEMBER.email, password: MEMBER.password };
  const res = await send("POST", `${path}/login`, form(fields), { ...FORM, cookie: formCookie });
  expect(res.status).toBe(303);
  const cookie = `${res.headers.getSetCookie()[0]!.split(";")[0]!}; ${formCookie}`;
  const consent = await send("GET", path, undefined, { cookie });
  const html = await consent.text();
  expect(consent.status, html).toBe(200);
  return {
    path,
    cookie,
    formToken,
    id: decodeURIComponent(path.split("/").pop()!),
    csrf: /name="csrf_token" value="([^"]*)"/.exec(html)![1]!,
  };
}

describe("the OAuth endpoints (JSON answers)", () => {
  it("/oauth/token: U+0000 or a lone surrogate in any parameter, form, JSON or Basic, is 400 invalid_request and issues nothing", async () => {
    const cases: [string, string | undefined, Record<string, string>][] = [
      [
        "form client_id",
        form({ grant_type: "client_credentials", client_id: `${app.id}${NUL}`, client_secret: app.secret }),
        FORM,
      ],
      ["form client_id alone", form({ grant_type: "client_credentials", client_id: NUL }), FORM],
      [
        "form client_secret",
        form({ grant_type: "client_credentials", client_id: app.id, client_secret: `${app.secret}${NUL}` }),
        FORM,
      ],
      [
        "form scope",
        form({ grant_type: "client_credentials", client_id: app.id, client_secret: app.secret, scope: NUL }),
        FORM,
      ],
      [
        "form code",
        form({
          grant_type: "authorization_code",
          client_id: publicClientId,
          code: NUL,
          redirect_uri: REDIRECT,
          code_verifier: "v".repeat(43),
        }),
        FORM,
      ],
      [
        "form refresh_token",
        form({ grant_type: "refresh_token", client_id: publicClientId, refresh_token: `r${NUL}` }),
        FORM,
      ],
      [
        "form parameter name",
        `grant_type=client_credentials&client_id=${app.id}&client_secret=${app.secret}&x%00=1`,
        FORM,
      ],
      [
        "Basic client_id",
        form({ grant_type: "client_credentials" }),
        { ...FORM, authorization: basic(`${app.id}%00`, app.secret) },
      ],
      [
        "Basic client_id raw",
        form({ grant_type: "client_credentials" }),
        { ...FORM, authorization: basic(`${app.id}${NUL}`, app.secret) },
      ],
      [
        "Basic secret",
        form({ grant_type: "client_credentials" }),
        { ...FORM, authorization: basic(app.id, `${app.secret}%00`) },
      ],
      [
        "JSON client_id",
        `{"grant_type":"client_credentials","client_id":"${app.id}\\u0000","client_secret":"${app.secret}"}`,
        JSON_TYPE,
      ],
      [
        "JSON lone surrogate",
        `{"grant_type":"client_credentials","client_id":"\\ud800","client_secret":"${app.secret}"}`,
        JSON_TYPE,
      ],
      [
        "JSON low surrogate",
        `{"grant_type":"client_credentials","client_id":"${app.id}","client_secret":"\\udc00x"}`,
        JSON_TYPE,
      ],
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
      for (const [body, headers] of cases)
        await expectError(await send("POST", path, body, headers), 400, "invalid_request");
    }
    // Nothing was revoked: the token still works.
    const me = await call(app, "GET", "/oauth/me");
    expect(me.status).toBe(200);
  });

  it("the JSON consent: client_id, interaction_id, state (also nested or as a name) are 400 invalid_request", async () => {
    const { cookie, id, csrf, path } = await signedIn();
    const fields = {
      decision: "allow",
      interaction_id: id,
      csrf_token: csrf,
      response_type: "code",
      client_id: publicClientId,
      redirect_uri: REDIRECT,
    };
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
    const { path, csrf, formToken, formCookie } = await interaction();
    for (const fields of [
      { csrf_token: csrf, email: `${MEMBER.email}${NUL}`, password: MEMBER.password },
      { csrf_token: csrf, email: NUL, password: "x" },
      { csrf_token: csrf, email: MEMBER.email, password: `${MEMBER.password}${NUL}` },
      { csrf_token: `${csrf}${NUL}`, email: MEMBER.email, password: MEMBER.password },
    ]) {
      const res = await send("POST", `${path}/login`, form({ ...fields, form_token: formToken }), {
        ...FORM,
        cookie: formCookie,
      });
      expect(res.headers.get("set-cookie")).toBeNull();
      await expectPage400(res);
    }
    const valid = form({ csrf_token: csrf, form_token: formToken, email: MEMBER.email, password: MEMBER.password });
    await expectPage400(await send("POST", `${path}%00/login`, valid, { ...FORM, cookie: formCookie }));
    await expectPage400(await send("GET", `${path}%00`));
    await expectPage400(await send("GET", "/oauth/interaction/%00"));
    // Not signed in by any of them: the login page still shows.
    const page = await send("GET", path);
    expect(await page.text()).toContain('name="password"');
  });

  it("the consent form: interaction_id and client_id", async () => {
    const { cookie, id, csrf, formToken } = await signedIn();
    const fields = {
      decision: "allow",
      interaction_id: id,
      csrf_token: csrf,
      form_token: formToken,
      response_type: "code",
      client_id: publicClientId,
      redirect_uri: REDIRECT,
    };
    await expectPage400(
      await send("POST", "/oauth/authorize/consent", form({ ...fields, interaction_id: `${id}${NUL}` }), {
        ...FORM,
        cookie,
      }),
    );
    await expectPage400(
      await send("POST", "/oauth/authorize/consent", form({ ...fields, client_id: NUL }), { ...FORM, cookie }),
    );
  });

  it("the account pages: the revoke form's client_id", async () => {
    const { cookie, csrf, formToken } = await signedIn();
    const fields = { client_id: `${app.id}${NUL}`, csrf_token: csrf, form_token: formToken };
    await expectPage400(await send("POST", "/account/applications/revoke", form(fields), { ...FORM, cookie }));
    await expectPage400(
      await send("GET", `/account/applications?notice=${encodeURIComponent(NUL)}`, undefined, { cookie }),
    );
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

    const created = await call(app, "POST", SUBSCRIPTIONS, {
      target_url: "http://hooks.example.test/kept",
      event_type: "contact.created",
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: number };
    await expectError(
      await call(app, "PUT", `${SUBSCRIPTIONS}/${id}`, '{"target_url":"http://hooks.example.test/\\ud800"}'),
      400,
      "invalid_request",
    );
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
