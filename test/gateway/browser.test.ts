// The OAuth pages in a real browser: Debian's headless Chromium, driven by
// playwright-core, in front of the real services. Login, consent and the
// redirect with a code to the client's own (local) server; then the
// connected-applications page and Revoke. Screenshots of the three pages go
// to test-results/screenshots/ for a person to look at.
import { mkdir } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../support/chromium.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { pkcePair, startPagePlatform, type PagePlatform } from "../support/page-platform.js";
import { ROOT } from "../support/processes.js";

const SHOTS = path.join(ROOT, "test-results", "screenshots");

let platform: PagePlatform;
let browser: Browser;
let callback: Server;
let callbackBase: string;
/** The requests the client's redirect URI received. */
const arrivals: URL[] = [];

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  callback = createServer((req, res) => {
    const arrived = new URL(req.url!, callbackBase);
    if (arrived.pathname === "/frame") {
      // Another origin trying to frame a page of the gateway (clickjacking).
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      return res.end(
        `<!doctype html><title>framing</title><iframe src="${new URL(arrived.searchParams.get("src")!, platform.base).href}"></iframe>`,
      );
    }
    if (arrived.pathname === "/favicon.ico") return res.writeHead(204).end();
    arrivals.push(arrived);
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("the client received the answer");
  });
  await new Promise<void>((resolve) => callback.listen(0, "127.0.0.1", resolve));
  callbackBase = `http://127.0.0.1:${(callback.address() as AddressInfo).port}`;
  platform = await startPagePlatform("browser");
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await new Promise((resolve) => callback?.close(resolve));
});

/** Everything the page itself refuses (CSP violations, console errors) fails the test. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(e.message));
  return problems;
}

it("login, consent, the code at the client's redirect URI, then the connected applications and Revoke", async () => {
  const app = await platform.createClient("Acme CRM", [`${callbackBase}/cb`], {
    scopes: ["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"],
  });
  const pkce = await pkcePair();
  const context = await browser.newContext({ viewport: { width: 960, height: 760 }, locale: "en-GB" });
  const page = await context.newPage();
  const problems = watchProblems(page);

  const authorize = new URL("/oauth/authorize", platform.base);
  authorize.search = new URLSearchParams({
    response_type: "code",
    client_id: app.clientId,
    redirect_uri: `${callbackBase}/cb`,
    scope: "organisation:read webhooks:write contacts:read",
    state: "browser-state",
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  }).toString();
  await page.goto(authorize.href);

  // The login page: labelled fields, a visible heading, the stylesheet applied.
  await expect.poll(() => page.getByRole("heading", { name: "Sign in" }).isVisible()).toBe(true);
  expect(await page.getByText("Acme CRM").isVisible()).toBe(true);
  // The stylesheet loaded under the page's CSP (style-src 'self').
  expect(
    await page.evaluate<string>("getComputedStyle(document.querySelector('.button-primary')).backgroundColor"),
  ).toBe("rgb(47, 91, 234)");
  await page.screenshot({ path: path.join(SHOTS, "login.png"), fullPage: true });

  // A wrong password first: the same page, one generic message.
  await page.getByLabel("Email").fill(platform.member.email);
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("The email or password is not right.");

  await page.getByLabel("Password").fill(platform.member.password);
  await page.getByRole("button", { name: "Sign in" }).click();

  // The consent page.
  await expect.poll(() => page.getByRole("button", { name: "Allow" }).isVisible()).toBe(true);
  const text = await page.locator("main").innerText();
  expect(text).toContain("Acme CRM wants to access browser Org, your bizcard organisation");
  expect(text).toContain("See your organisation's name");
  expect(text).toContain("Create, change and delete this application's webhook subscriptions");
  expect(text).toContain("Read your organisation's contacts and be told when they change");
  expect(text).toContain(platform.member.email);
  expect(text).toContain("127.0.0.1");
  await page.screenshot({ path: path.join(SHOTS, "consent.png"), fullPage: true });

  // Allow: the browser lands on the client's redirect URI with the code
  // (the page's CSP form-action admits the redirect after the POST).
  await page.getByRole("button", { name: "Allow" }).click();
  await expect.poll(() => arrivals.length, { timeout: 10_000 }).toBe(1);
  const arrived = arrivals[0]!;
  expect(arrived.pathname).toBe("/cb");
  expect(arrived.searchParams.get("code")).toMatch(/^bcc_/);
  expect(arrived.searchParams.get("state")).toBe("browser-state");
  expect(arrived.searchParams.get("iss")).toBe(platform.base);
  expect(await page.textContent("body")).toContain("the client received the answer");

  // The connected applications, same session.
  await page.goto(new URL("/account/applications", platform.base).href);
  await expect.poll(() => page.getByRole("heading", { name: "Connected applications" }).isVisible()).toBe(true);
  const row = page.getByRole("row", { name: /Acme CRM/ });
  expect(await row.innerText()).toContain("Read your organisation's contacts and be told when they change");
  await page.screenshot({ path: path.join(SHOTS, "applications.png"), fullPage: true });

  // Revoke asks first: nothing is withdrawn until the confirmation is pressed.
  await page.getByLabel("Revoke access for Acme CRM").click();
  const confirm = page.getByRole("button", { name: "Yes, revoke access for Acme CRM" });
  await expect.poll(() => confirm.isVisible()).toBe(true);
  expect(await page.getByRole("row", { name: /Acme CRM/ }).count()).toBe(1);
  await confirm.click();
  await expect.poll(() => page.getByRole("status").textContent()).toContain("Access withdrawn from Acme CRM.");
  expect(await page.getByRole("row", { name: /Acme CRM/ }).count()).toBe(0);
  expect(await page.getByText("No application has access to your organisation.").isVisible()).toBe(true);
  await page.screenshot({ path: path.join(SHOTS, "applications-after-revoke.png"), fullPage: true });

  // Sign out: the next visit asks for a login again.
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect.poll(() => page.getByRole("heading", { name: "Sign in" }).isVisible()).toBe(true);
  expect(await page.getByText("to manage the applications connected to your organisation").isVisible()).toBe(true);

  expect(problems).toEqual([]);
  await context.close();
});

it("an unknown client is an error page in the browser, and no page can be framed", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${callbackBase}/frame?src=${encodeURIComponent("/account/login")}`);
  await expect.poll(() => page.frames().length).toBe(2);
  const framed = page.frames()[1]!;
  // frame-ancestors 'none': Chromium shows its own error in place of the page.
  await expect.poll(async () => framed.url()).toMatch(/^chrome-error:/);
  expect(await framed.locator("form").count()).toBe(0);

  const res = await page.goto(
    new URL(
      "/oauth/authorize?response_type=code&client_id=nobody&redirect_uri=https%3A%2F%2Fevil.example%2F",
      platform.base,
    ).href,
  );
  expect(res?.status()).toBe(400);
  expect(new URL(page.url()).origin).toBe(platform.base);
  expect(await page.getByRole("heading", { name: "This sign-in link is not valid" }).isVisible()).toBe(true);
  await page.screenshot({ path: path.join(SHOTS, "error.png"), fullPage: true });
  await context.close();
});
