// The OAuth pages as a browser sees them, over HTTP, in front of the real
// auth and organisation services: the stylesheet, the authorization
// request's error page (never a redirect for an unknown client or an
// unregistered redirect URI), and the login page with its headers, escaping,
// session cookie and CSRF refusals. The consent and connected-applications
// pages: oauth-pages-consent.test.ts.
import { describe, expect, it } from "vitest";
import {
  authorizePath,
  expectPageHeaders,
  formCookie,
  get,
  good,
  hidden,
  HOSTILE,
  hostile,
  platform,
  postForm,
  REDIRECT,
  startAuthorization,
  url,
  usePagesSuite,
} from "../support/pages-suite.js";

usePagesSuite();

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
    expect(html).toContain('<html lang="en">');
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
    const res = await postForm(`${interaction}/login`, {
      email: platform.member.email,
      password: platform.member.password,
    });
    expect(res.status).toBe(403);
    expectPageHeaders(res);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(await res.text()).toContain("This form has expired");
  });

  it("a wrong password shows the form again with one generic message, and sets no cookie", async () => {
    const interaction = await startAuthorization(good.clientId);
    const page = await get(interaction);
    const html = await page.text();
    const tokens = { csrf_token: hidden(html, "csrf_token"), form_token: hidden(html, "form_token") };
    const res = await postForm(
      `${interaction}/login`,
      { ...tokens, email: platform.member.email, password: "wrong" },
      formCookie(page),
    );
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(res.headers.getSetCookie()).toEqual([]);
    const again = await res.text();
    expect(again).toContain("The email or password is not right.");
    expect(again).toContain(`value="${platform.member.email}"`);
    const unknown = await postForm(
      `${interaction}/login`,
      { ...tokens, email: "nobody@pages.test", password: "wrong" },
      formCookie(page),
    );
    expect(await unknown.text()).toContain("The email or password is not right.");
  });

  it("past the failed-login limit for one email and address, the page is 429 with Retry-After", async () => {
    const interaction = await startAuthorization(good.clientId);
    const page = await get(interaction);
    const html = await page.text();
    const fields = {
      csrf_token: hidden(html, "csrf_token"),
      form_token: hidden(html, "form_token"),
      email: "limited@pages.test",
      password: "guess",
    };
    const attempt = () => postForm(`${interaction}/login`, fields, formCookie(page));
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
    const page = await get(interaction);
    const html = await page.text();
    const res = await postForm(
      `${interaction}/login`,
      {
        csrf_token: hidden(html, "csrf_token"),
        form_token: hidden(html, "form_token"),
        email: platform.member.email,
        password: platform.member.password,
      },
      formCookie(page),
    );
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
      const page = await fetch(`${https.base}${interaction}`);
      const html = await page.text();
      // The form cookie too is __Host- and Secure.
      const form = formCookie(page, "__Host-bizcard_form");
      expect(page.headers.getSetCookie()[0]).toMatch(
        /^__Host-bizcard_form=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
      );
      const res = await fetch(`${https.base}${interaction}/login`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: form },
        body: new URLSearchParams({
          csrf_token: hidden(html, "csrf_token"),
          form_token: hidden(html, "form_token"),
          email: platform.member.email,
          password: platform.member.password,
        }).toString(),
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
