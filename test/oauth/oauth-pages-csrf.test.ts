// Cross-site request forgery against the forms that change state, as an
// attacker's page would try it: login CSRF (a victim's browser signed in to
// the attacker's account with an interaction the attacker started), and
// cross-site posts of the consent, revoke and sign-out forms. Each is 403 and
// changes nothing; the same forms sent from the page that showed them work.
import { describe, expect, it } from "vitest";
import {
  consentFields,
  consentPage,
  expectPageHeaders,
  formCookie,
  formCookieOf,
  get,
  good,
  hidden,
  platform,
  postForm,
  startAuthorization,
  url,
  usePagesSuite,
} from "../support/pages-suite.js";

usePagesSuite();

const CROSS_SITE = { origin: "https://evil.example", "sec-fetch-site": "cross-site" };
// What a browser sends with a form of this site's own pages (Referrer-Policy: no-referrer makes the Origin null).
const SAME_ORIGIN = { origin: "null", "sec-fetch-site": "same-origin" };

function post(path: string, fields: Record<string, string>, headers: Record<string, string>): Promise<Response> {
  return fetch(url(path), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The attacker's own interaction: its login page's tokens and the attacker's form cookie. */
async function attackersInteraction() {
  const interaction = await startAuthorization(good.clientId);
  const page = await get(interaction);
  const html = await page.text();
  return {
    interaction,
    csrf: hidden(html, "csrf_token"),
    formToken: hidden(html, "form_token"),
    cookie: formCookie(page),
  };
}

/** A victim's browser that has seen a page of this site: its own form cookie. */
async function victimsFormCookie(): Promise<string> {
  return formCookie(await get(await startAuthorization(good.clientId)));
}

async function expectRefused(res: Response): Promise<void> {
  expect(res.status).toBe(403);
  expectPageHeaders(res);
  expect(res.headers.get("location")).toBeNull();
  expect(res.headers.getSetCookie().filter((c) => c.includes("bizcard_session="))).toEqual([]);
  expect(await res.text()).toContain("This form has expired");
}

describe("login CSRF", () => {
  it("a cross-site post of the attacker's interaction, token and credentials signs no browser in", async () => {
    const attacker = await attackersInteraction();
    const fields = {
      csrf_token: attacker.csrf,
      form_token: attacker.formToken,
      email: platform.member.email,
      password: platform.member.password,
    };
    const victim = await victimsFormCookie();
    // The victim's browser, with its Fetch Metadata; an older one with its Origin only; one sending neither.
    await expectRefused(await post(`${attacker.interaction}/login`, fields, { ...CROSS_SITE, cookie: victim }));
    await expectRefused(
      await post(`${attacker.interaction}/login`, fields, { origin: "https://evil.example", cookie: victim }),
    );
    await expectRefused(await post(`${attacker.interaction}/login`, fields, { cookie: victim }));
    // A browser that never saw this site has no form cookie at all.
    await expectRefused(await post(`${attacker.interaction}/login`, fields, {}));
    // A same-site page (another subdomain) is another origin: refused too.
    await expectRefused(
      await post(`${attacker.interaction}/login`, fields, { "sec-fetch-site": "same-site", cookie: attacker.cookie }),
    );
    // Nothing changed: the interaction still waits for its login.
    expect(await (await get(attacker.interaction)).text()).toContain('name="password"');
  });

  it("the form sent from the page that showed it, in the browser that was shown it, signs in", async () => {
    const own = await attackersInteraction();
    const fields = {
      csrf_token: own.csrf,
      form_token: own.formToken,
      email: platform.member.email,
      password: platform.member.password,
    };
    const res = await post(`${own.interaction}/login`, fields, { ...SAME_ORIGIN, cookie: own.cookie });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(own.interaction);
    expect(res.headers.getSetCookie()[0]).toMatch(/^bizcard_session=/);
  });

  it("the form cookie is HttpOnly, SameSite=Lax, a session cookie; a page reuses the browser's", async () => {
    const first = await get(await startAuthorization(good.clientId));
    const [set] = first.headers.getSetCookie();
    expect(set).toMatch(/^bizcard_form=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
    const again = await get(await startAuthorization(good.clientId), formCookie(first));
    expect(again.headers.getSetCookie()).toEqual([]);
    expect(hidden(await again.text(), "form_token")).toBe(formCookie(first).split("=")[1]);
  });
});

describe("the other forms that change state", () => {
  it("a cross-site consent is refused, as a form and as JSON, and issues no code", async () => {
    const { html, cookie, interaction } = await consentPage(good.clientId);
    const fields = consentFields(html, "allow");
    await expectRefused(await post("/oauth/authorize/consent", fields, { ...CROSS_SITE, cookie }));
    const json = await fetch(url("/oauth/authorize/consent"), {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/json", ...CROSS_SITE, cookie },
      body: JSON.stringify(fields),
    });
    expect(json.status).toBe(403);
    expect(await json.json()).toEqual({
      error: "invalid_csrf_token",
      error_description: expect.stringContaining("another site"),
    });
    // Another browser's form token (the attacker's own) is refused in this browser.
    const attacker = await attackersInteraction();
    await expectRefused(
      await post("/oauth/authorize/consent", { ...fields, form_token: attacker.formToken }, { cookie }),
    );
    // Still undecided: the page shows, and the real form then works.
    expect((await get(interaction, cookie)).status).toBe(200);
    const allowed = await postForm("/oauth/authorize/consent", fields, cookie);
    expect(allowed.status).toBe(303);
    expect(new URL(allowed.headers.get("location")!).searchParams.get("code")).toMatch(/^bcc_/);
  });

  it("a cross-site revoke or sign-out is refused and changes nothing", async () => {
    const { html: consentHtml, cookie } = await consentPage(good.clientId, { scope: "organisation:read" });
    expect((await postForm("/oauth/authorize/consent", consentFields(consentHtml, "allow"), cookie)).status).toBe(303);
    const page = await get("/account/applications", cookie);
    expect(page.status).toBe(200);
    const html = await page.text();
    const tokens = { csrf_token: hidden(html, "csrf_token"), form_token: hidden(html, "form_token") };
    await expectRefused(
      await post("/account/applications/revoke", { ...tokens, client_id: good.clientId }, { ...CROSS_SITE, cookie }),
    );
    await expectRefused(await post("/account/logout", tokens, { ...CROSS_SITE, cookie }));
    await expectRefused(await post("/account/logout", { csrf_token: tokens.csrf_token }, { cookie }));
    const after = await get("/account/applications", cookie);
    expect(after.status).toBe(200);
    expect(await after.text()).toContain("Good App");
    // From the page itself, both work.
    const revoked = await post(
      "/account/applications/revoke",
      { ...tokens, client_id: good.clientId },
      { ...SAME_ORIGIN, cookie },
    );
    expect(revoked.headers.get("location")).toBe(
      `/account/applications?notice=revoked&client_id=${encodeURIComponent(good.clientId)}`,
    );
    const out = await post("/account/logout", tokens, { ...SAME_ORIGIN, cookie });
    expect(out.headers.get("location")).toBe("/account/login");
    expect((await get("/account/applications", cookie)).headers.get("location")).toBe("/account/login");
    expect(formCookieOf(cookie)).toMatch(/^bizcard_form=/);
  });
});
