// The OAuth pages as a browser sees them, over HTTP, in front of the real
// auth and organisation services: the authorization request's error page
// (never a redirect for an unknown client or an unregistered redirect URI),
// the login and consent pages with their headers and escaping, the session
// cookie's attributes, CSRF refusals, the consent POST as a form and as JSON,
// and the connected-applications page with revoke and logout.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pkcePair, startPagePlatform, type PagePlatform } from "./support/page-platform.js";

const HOSTILE = "<script>alert(1)</script>";
const REDIRECT = "https://client.example/cb";
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

let platform: PagePlatform;
let hostile: { clientId: string };
let good: { clientId: string };

beforeAll(async () => {
  platform = await startPagePlatform("pages");
  hostile = await platform.createClient(HOSTILE, [REDIRECT]);
  good = await platform.createClient("Good App", [REDIRECT, "https://other.example/return"], { scopes: ["organisation:read", "webhooks:read"] });
});

afterAll(async () => {
  await platform?.stop();
});

const url = (path: string) => new URL(path, platform.base).href;

function get(path: string, cookie?: string): Promise<Response> {
  return fetch(url(path), { redirect: "manual", headers: cookie ? { cookie } : {} });
}

function postForm(path: string, fields: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(url(path), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
}

const decodeEntities = (s: string) =>
  s.replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");

/** The value of a form's hidden input. */
function hidden(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no input ${name} in the page`);
  return decodeEntities(match[1]!);
}

function authorizePath(clientId: string, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: REDIRECT, state: "st-1", ...extra });
  return `/oauth/authorize?${q}`;
}

/** "name=value" of the session cookie a response sets. */
function sessionCookie(res: Response, name = "bizcard_session"): string {
  const set = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!set) throw new Error(`no ${name} cookie set`);
  return set.split(";")[0]!;
}

function expectPageHeaders(res: Response, csp = CSP): void {
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(res.headers.get("content-security-policy")).toBe(csp);
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(res.headers.get("referrer-policy")).toBe("no-referrer");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
}

/** An authorization request up to its interaction's page path. */
async function startAuthorization(clientId: string, extra: Record<string, string> = {}): Promise<string> {
  const res = await get(authorizePath(clientId, extra));
  expect(res.status).toBe(303);
  const location = res.headers.get("location")!;
  expect(location).toMatch(/^\/oauth\/interaction\/[^/?#]+$/);
  return location;
}

/** Logs the member in on an interaction's login page; the session cookie. */
async function login(interaction: string): Promise<string> {
  const page = await get(interaction);
  expect(page.status).toBe(200);
  const html = await page.text();
  const res = await postForm(`${interaction}/login`, {
    csrf_token: hidden(html, "csrf_token"),
    email: platform.member.email,
    password: platform.member.password,
  });
  expect(res.status).toBe(303);
  return sessionCookie(res);
}

/** An authorization request up to its consent page: the page, its path, the cookie. */
async function consentPage(clientId: string, extra: Record<string, string> = {}) {
  const interaction = await startAuthorization(clientId, extra);
  const cookie = await login(interaction);
  const res = await get(interaction, cookie);
  expect(res.status).toBe(200);
  return { res, html: await res.text(), interaction, cookie };
}

function consentFields(html: string, decision: string): Record<string, string> {
  const fields: Record<string, string> = { decision };
  for (const name of ["interaction_id", "csrf_token", "client_id", "redirect_uri", "scope", "state", "response_type", "code_challenge", "code_challenge_method"]) {
    try {
      fields[name] = hidden(html, name);
    } catch {
      // Absent from the request: absent from the form.
    }
  }
  return fields;
}

describe("the stylesheet", () => {
  it("is CSS, cached and revalidated by its ETag", async () => {
    const res = await get("/assets/pages.css");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/css; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("public, max-age=3600");
    const etag = res.headers.get("etag")!;
    expect(await res.text()).toContain(":focus-visible");
    const again = await fetch(url("/assets/pages.css"), { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
  });
});

describe("the authorization request", () => {
  it("an unknown client gets an error page, never a redirect", async () => {
    const res = await get(authorizePath("no-such-client"));
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expectPageHeaders(res);
    const html = await res.text();
    expect(html).toContain("<html lang=\"en\">");
    expect(html).toContain("This sign-in link is not valid");
    expect(html).not.toContain("client.example");
  });

  it.each([
    ["an unregistered host", "https://evil.example/cb"],
    ["a look-alike host", "https://client.example.evil.example/cb"],
    ["an extra path segment", "https://client.example/cb/../evil"],
    ["an added query", "https://client.example/cb?next=https://evil.example"],
    ["another scheme", "http://client.example/cb"],
    ["user-info", "https://client.example@evil.example/cb"],
    ["a protocol-relative URI", "//evil.example/cb"],
    ["a fragment", "https://client.example/cb#x"],
  ])("a redirect_uri with %s is an error page, never a redirect (open redirect)", async (_what, redirect) => {
    const res = await get(authorizePath(good.clientId, { redirect_uri: redirect }));
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expectPageHeaders(res);
    expect(await res.text()).toContain("This sign-in link is not valid");
  });

  it("any other error goes back to the registered redirect URI with error, state and iss", async () => {
    const res = await get(authorizePath(good.clientId, { response_type: "token" }));
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("error")).toBe("unsupported_response_type");
    expect(location.searchParams.get("state")).toBe("st-1");
    expect(location.searchParams.get("iss")).toBe(platform.base);
  });

  it("an unknown or expired interaction is a friendly page", async () => {
    const res = await get("/oauth/interaction/no-such-interaction");
    expect(res.status).toBe(404);
    expectPageHeaders(res);
    expect(await res.text()).toContain("This sign-in request has expired");
  });
});

describe("the login page", () => {
  it("is a labelled form carrying the interaction's CSRF token, under the strict policy", async () => {
    const interaction = await startAuthorization(good.clientId);
    const res = await get(interaction);
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    const html = await res.text();
    expect(html).toContain(`<form method="post" action="${interaction}/login"`);
    expect(html).toContain('<label for="email">Email</label>');
    expect(html).toContain('<label for="password">Password</label>');
    expect(hidden(html, "csrf_token").length).toBeGreaterThan(15);
    expect(html).toContain("Good App");
    expect(html).not.toMatch(/<script/i);
  });

  it("shows a hostile client name as text", async () => {
    const interaction = await startAuthorization(hostile.clientId);
    const html = await (await get(interaction)).text();
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain(HOSTILE);
  });

  it("refuses a login without the CSRF token, and sets no cookie", async () => {
    const interaction = await startAuthorization(good.clientId);
    const res = await postForm(`${interaction}/login`, { email: platform.member.email, password: platform.member.password });
    expect(res.status).toBe(403);
    expectPageHeaders(res);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(await res.text()).toContain("This form has expired");
  });

  it("a wrong password shows the form again with one generic message, and sets no cookie", async () => {
    const interaction = await startAuthorization(good.clientId);
    const html = await (await get(interaction)).text();
    const res = await postForm(`${interaction}/login`, { csrf_token: hidden(html, "csrf_token"), email: platform.member.email, password: "wrong" });
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(res.headers.getSetCookie()).toEqual([]);
    const again = await res.text();
    expect(again).toContain("The email or password is not right.");
    expect(again).toContain(`value="${platform.member.email}"`);
    const unknown = await postForm(`${interaction}/login`, { csrf_token: hidden(html, "csrf_token"), email: "nobody@pages.test", password: "wrong" });
    expect(await unknown.text()).toContain("The email or password is not right.");
  });

  it("past the failed-login limit for one email and address, the page is 429 with Retry-After", async () => {
    const interaction = await startAuthorization(good.clientId);
    const html = await (await get(interaction)).text();
    const attempt = () => postForm(`${interaction}/login`, { csrf_token: hidden(html, "csrf_token"), email: "limited@pages.test", password: "guess" });
    // RATE_LIMIT_LOGIN_FAILURES: 10 a minute by default.
    for (let i = 0; i < 10; i++) expect((await attempt()).status).toBe(200);
    const limited = await attempt();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expectPageHeaders(limited);
    expect(await limited.text()).toContain("Too many attempts");
  });

  it("a login sets an HttpOnly, SameSite=Lax session cookie for the session's life, and goes back to the interaction", async () => {
    const interaction = await startAuthorization(good.clientId);
    const html = await (await get(interaction)).text();
    const res = await postForm(`${interaction}/login`, {
      csrf_token: hidden(html, "csrf_token"),
      email: platform.member.email,
      password: platform.member.password,
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(interaction);
    const [cookie] = res.headers.getSetCookie();
    expect(cookie).toMatch(/^bizcard_session=[A-Za-z0-9._~-]+; Max-Age=(\d+); Path=\/; HttpOnly; SameSite=Lax$/);
    const maxAge = Number(/Max-Age=(\d+)/.exec(cookie!)![1]);
    expect(maxAge).toBeGreaterThan(8 * 3600 - 60);
    expect(maxAge).toBeLessThanOrEqual(8 * 3600);
  });

  it("behind an https PUBLIC_URL the cookie is __Host- and Secure", async () => {
    const https = await platform.buildHttpsGateway();
    try {
      const start = await fetch(`${https.base}${authorizePath(good.clientId)}`, { redirect: "manual" });
      const interaction = start.headers.get("location")!;
      const html = await (await fetch(`${https.base}${interaction}`)).text();
      const res = await fetch(`${https.base}${interaction}/login`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ csrf_token: hidden(html, "csrf_token"), email: platform.member.email, password: platform.member.password }).toString(),
      });
      expect(res.status).toBe(303);
      const [cookie] = res.headers.getSetCookie();
      expect(cookie).toMatch(/^__Host-bizcard_session=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
      expect(cookie).not.toMatch(/Domain=/i);
    } finally {
      await https.close();
    }
  });
});

describe("the consent page", () => {
  it("names the application, each scope in plain words, the member and the redirect host; Allow and Deny", async () => {
    const { res, html } = await consentPage(good.clientId, { scope: "organisation:read webhooks:read" });
    // form-action admits the client's origin: the consent answer redirects there (CSP 3 §6.4.1).
    expectPageHeaders(res, CSP.replace("form-action 'self'", "form-action 'self' https://client.example"));
    expect(html).toContain("Good App");
    expect(html).toContain("See your organisation&#39;s name");
    expect(html).toContain("See the webhook subscriptions this application made");
    expect(html).toContain(platform.member.email);
    expect(html).toContain("client.example");
    expect(html).toContain('<button type="submit" name="decision" value="allow"');
    expect(html).toContain('<button type="submit" name="decision" value="deny"');
    expect(hidden(html, "client_id")).toBe(good.clientId);
    expect(hidden(html, "redirect_uri")).toBe(REDIRECT);
    expect(hidden(html, "state")).toBe("st-1");
    expect(hidden(html, "response_type")).toBe("code");
  });

  it("shows a hostile client name as text", async () => {
    const { html } = await consentPage(hostile.clientId);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain(HOSTILE);
  });

  it("Allow answers 303 to the redirect URI with code, state and iss; PKCE fields travel in the form", async () => {
    const pkce = await pkcePair();
    const { html, cookie } = await consentPage(good.clientId, { code_challenge: pkce.challenge, code_challenge_method: "S256" });
    expect(hidden(html, "code_challenge")).toBe(pkce.challenge);
    const res = await postForm("/oauth/authorize/consent", consentFields(html, "allow"), cookie);
    expect(res.status).toBe(303);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("code")).toMatch(/^bcc_/);
    expect(location.searchParams.get("state")).toBe("st-1");
    expect(location.searchParams.get("iss")).toBe(platform.base);
  });

  it("Deny answers 303 with error=access_denied, state and iss", async () => {
    const { html, cookie } = await consentPage(good.clientId);
    const res = await postForm("/oauth/authorize/consent", consentFields(html, "deny"), cookie);
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("code")).toBeNull();
    expect(location.searchParams.get("state")).toBe("st-1");
    expect(location.searchParams.get("iss")).toBe(platform.base);
  });

  it("refuses a consent without the CSRF token: a page, never a redirect", async () => {
    const { html, cookie } = await consentPage(good.clientId);
    const fields = consentFields(html, "allow");
    delete fields.csrf_token;
    const res = await postForm("/oauth/authorize/consent", fields, cookie);
    expect(res.status).toBe(403);
    expect(res.headers.get("location")).toBeNull();
    expectPageHeaders(res);
  });

  it("refuses a consent whose fields differ from the request's (another redirect_uri): never a redirect there", async () => {
    const { html, cookie } = await consentPage(good.clientId);
    const fields = { ...consentFields(html, "allow"), redirect_uri: "https://other.example/return" };
    const res = await postForm("/oauth/authorize/consent", fields, cookie);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.headers.get("location")).toBeNull();
  });

  it("a consent form without a session goes back to the interaction's login", async () => {
    const { html, interaction } = await consentPage(good.clientId);
    const res = await postForm("/oauth/authorize/consent", consentFields(html, "allow"));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(interaction);
  });

  it("takes a JSON body with the page's fields (its interaction and CSRF token too) and a session, and answers 401 JSON without one", async () => {
    const { html, cookie } = await consentPage(good.clientId, { scope: "organisation:read", state: "js-1" });
    const body = JSON.stringify(consentFields(html, "allow"));
    const res = await fetch(url("/oauth/authorize/consent"), { method: "POST", redirect: "manual", headers: { "content-type": "application/json", cookie }, body });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(location.searchParams.get("code")).toMatch(/^bcc_/);
    expect(location.searchParams.get("state")).toBe("js-1");

    const anonymous = await fetch(url("/oauth/authorize/consent"), { method: "POST", redirect: "manual", headers: { "content-type": "application/json" }, body });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await anonymous.json()).toMatchObject({ error: "login_required" });
  });

  it("a form without interaction_id is refused (only JSON may go without one)", async () => {
    const { cookie } = await consentPage(good.clientId);
    const res = await postForm("/oauth/authorize/consent", { response_type: "code", client_id: good.clientId, redirect_uri: REDIRECT, decision: "allow" }, cookie);
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expectPageHeaders(res);
  });
});

describe("connected applications", () => {
  async function accountLogin(): Promise<string> {
    const start = await get("/account/login");
    expect(start.status).toBe(303);
    const interaction = start.headers.get("location")!;
    const html = await (await get(interaction)).text();
    const res = await postForm(`${interaction}/login`, { csrf_token: hidden(html, "csrf_token"), email: platform.member.email, password: platform.member.password });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/account/applications");
    return sessionCookie(res);
  }

  it("the account login with a live session goes straight to the applications", async () => {
    const cookie = await accountLogin();
    const again = await get("/account/login", cookie);
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toBe("/account/applications");
  });

  it("without a session sends the browser to the login", async () => {
    const res = await get("/account/applications");
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/account/login");
  });

  it("lists the applications with access, revokes one with its CSRF token, and logs out", async () => {
    const other = await platform.createClient("Other App", [REDIRECT]);
    for (const clientId of [good.clientId, other.clientId]) {
      const { html, cookie } = await consentPage(clientId, { scope: "organisation:read" });
      expect((await postForm("/oauth/authorize/consent", consentFields(html, "allow"), cookie)).status).toBe(303);
    }
    const cookie = await accountLogin();
    const page = await get("/account/applications", cookie);
    expect(page.status).toBe(200);
    expectPageHeaders(page);
    const html = await page.text();
    expect(html).toContain("Good App");
    expect(html).toContain("Other App");
    expect(html).toContain("See your organisation&#39;s name");
    expect(html).toMatch(/<time datetime="\d{4}-\d\d-\d\dT/);
    const csrf = hidden(html, "csrf_token");

    const forged = await postForm("/account/applications/revoke", { client_id: other.clientId }, cookie);
    expect(forged.status).toBe(403);

    const revoked = await postForm("/account/applications/revoke", { client_id: other.clientId, csrf_token: csrf }, cookie);
    expect(revoked.status).toBe(303);
    expect(revoked.headers.get("location")).toBe("/account/applications?notice=revoked");
    const after = await (await get("/account/applications?notice=revoked", cookie)).text();
    expect(after).toContain("Access withdrawn");
    expect(after).not.toContain("Other App");
    expect(after).toContain("Good App");

    expect((await postForm("/account/logout", {}, cookie)).status).toBe(403);
    const out = await postForm("/account/logout", { csrf_token: csrf }, cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("/account/login");
    expect(out.headers.getSetCookie()[0]).toMatch(/^bizcard_session=; Max-Age=0; /);
    // The session is over at the auth service, not only in this browser.
    const gone = await get("/account/applications", cookie);
    expect(gone.status).toBe(303);
    expect(gone.headers.get("location")).toBe("/account/login");
  });
});

describe("JSON routes stay JSON", () => {
  it("an unknown path is still the one JSON error shape", async () => {
    const res = await get("/oauth/nowhere");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });
});
