// The consent page (its POST as a form and as JSON), the connected-
// applications page with revoke and logout, and the JSON routes that stay
// JSON, as a browser sees them.
import { describe, expect, it } from "vitest";
import { pkcePair } from "../support/page-platform.js";
import {
  consentFields,
  consentPage,
  CSP,
  expectPageHeaders,
  formCookie,
  formCookieOf,
  get,
  good,
  hidden,
  HOSTILE,
  hostile,
  platform,
  postForm,
  REDIRECT,
  sessionCookie,
  url,
  usePagesSuite,
} from "../support/pages-suite.js";

usePagesSuite();

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
    const { html, cookie } = await consentPage(good.clientId, {
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
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
    const { html, interaction, cookie } = await consentPage(good.clientId);
    const res = await postForm("/oauth/authorize/consent", consentFields(html, "allow"), formCookieOf(cookie));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(interaction);
  });

  it("takes a JSON body with the page's fields (its interaction and CSRF token too) and a session, and answers 401 JSON without one", async () => {
    const { html, cookie } = await consentPage(good.clientId, { scope: "organisation:read", state: "js-1" });
    const body = JSON.stringify(consentFields(html, "allow"));
    const res = await fetch(url("/oauth/authorize/consent"), {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/json", cookie },
      body,
    });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(location.searchParams.get("code")).toMatch(/^bcc_/);
    expect(location.searchParams.get("state")).toBe("js-1");

    const anonymous = await fetch(url("/oauth/authorize/consent"), {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await anonymous.json()).toMatchObject({ error: "login_required" });
  });

  it("a form without interaction_id is refused (only JSON may go without one)", async () => {
    const { cookie, html } = await consentPage(good.clientId);
    const fields = {
      response_type: "code",
      client_id: good.clientId,
      redirect_uri: REDIRECT,
      decision: "allow",
      form_token: hidden(html, "form_token"),
    };
    const res = await postForm("/oauth/authorize/consent", fields, cookie);
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
    const page = await get(interaction);
    const html = await page.text();
    const fields = {
      csrf_token: hidden(html, "csrf_token"),
      form_token: hidden(html, "form_token"),
      email: platform.member.email,
      password: platform.member.password,
    };
    const res = await postForm(`${interaction}/login`, fields, formCookie(page));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/account/applications");
    return `${sessionCookie(res)}; ${formCookie(page)}`;
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
    const form = hidden(html, "form_token");

    const forged = await postForm(
      "/account/applications/revoke",
      { client_id: other.clientId, form_token: form },
      cookie,
    );
    expect(forged.status).toBe(403);

    const revoked = await postForm(
      "/account/applications/revoke",
      { client_id: other.clientId, csrf_token: csrf, form_token: form },
      cookie,
    );
    expect(revoked.status).toBe(303);
    const location = `/account/applications?notice=revoked&client_id=${encodeURIComponent(other.clientId)}`;
    expect(revoked.headers.get("location")).toBe(location);
    // The page asks before it revokes, and the notice after names the application.
    expect(html).toContain("Yes, revoke access for Other App</button>");
    const after = await (await get(location, cookie)).text();
    expect(after).toContain("Access withdrawn from Other App. It can no longer use its tokens.");
    expect(after).not.toContain(`value="${other.clientId}"`);
    expect(after).toContain("Good App");

    expect((await postForm("/account/logout", { form_token: form }, cookie)).status).toBe(403);
    const out = await postForm("/account/logout", { csrf_token: csrf, form_token: form }, cookie);
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
