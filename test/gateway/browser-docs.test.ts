// The developers' pages in a real browser (Debian's headless Chromium through
// playwright-core, as test/gateway/browser.test.ts): the landing page, and /docs
// rendering the OpenAPI document with Swagger UI. Every request to another
// host is aborted and recorded, every CSP violation collected: there must be
// none. Screenshots go to test-results/screenshots/ for a person to look at.
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchChromium } from "../support/chromium.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";
import { ROOT } from "../support/processes.js";

const SHOTS = path.join(ROOT, "test-results", "screenshots");
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

let platform: Platform;
let browser: Browser;

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  platform = await startPlatform({ auth: true, gateway: { publicUrlPort: true, serviceUrls: {} } });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
});

interface Watched {
  page: Page;
  context: BrowserContext;
  /** Requests to another host (aborted). */
  offHost: string[];
  /** CSP violations and page errors. */
  problems: string[];
}

async function openWatched(): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, locale: "en-GB" });
  const offHost: string[] = [];
  // The page renders the gateway's own document.
  expect((await fetch(`${platform.base}/openapi.json`)).status).toBe(200);
  await context.route("**/*", async (route) => {
    const url = new URL(route.request().url());
    if (!LOOPBACK.has(url.hostname)) {
      offHost.push(url.href);
      return route.abort("blockedbyclient");
    }
    return route.continue();
  });
  // The page's own record of every violation (an init script runs whatever the policy says).
  await context.addInitScript({
    content: `window.cspViolations = []; document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`,
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(e.message));
  return { page, context, offHost, problems };
}

const violations = (page: Page) => page.evaluate<string[]>("window.cspViolations");

it("the landing page: in the pages' style, every link there, the reference one click away", async () => {
  const { page, context, offHost, problems } = await openWatched();
  const res = await page.goto(`${platform.base}/`);
  expect(res?.status()).toBe(200);
  await expect.poll(() => page.getByRole("heading", { name: "Build on bizcard" }).isVisible()).toBe(true);
  // The pages' stylesheet applied under the policy.
  expect(
    await page.evaluate<string>("getComputedStyle(document.querySelector('.button-primary')).backgroundColor"),
  ).toBe("rgb(47, 91, 234)");
  for (const name of [
    "API reference",
    "OpenAPI 3.1 document",
    "Webhook event types",
    "OAuth 2.0 server metadata",
    "Connected applications",
    "Health",
    "Readiness",
  ]) {
    expect(await page.getByRole("link", { name, exact: true }).isVisible(), name).toBe(true);
  }
  await page.screenshot({ path: path.join(SHOTS, "landing.png"), fullPage: true });

  await page.getByRole("link", { name: "Open the API reference" }).click();
  await expect.poll(() => page.url()).toBe(`${platform.base}/docs`);
  expect(await violations(page)).toEqual([]);
  expect(problems).toEqual([]);
  expect(offHost).toEqual([]);
  await context.close();
});

it("/docs renders the document: the token operation and the contact.created webhook, nothing from another host, no CSP violation", async () => {
  const { page, context, offHost, problems } = await openWatched();
  const res = await page.goto(`${platform.base}/docs`);
  expect(res?.status()).toBe(200);
  const token = page.locator(".opblock-summary-path", { hasText: /^\/oauth\/token$/ }).first();
  await expect.poll(() => token.isVisible(), { timeout: 15_000 }).toBe(true);
  const webhook = page.locator(".opblock-summary-path", { hasText: /^contact\.created$/ }).first();
  await expect.poll(() => webhook.isVisible(), { timeout: 15_000 }).toBe(true);
  // Swagger UI's own stylesheet applied (style-src 'self'): an operation block is laid out as a flex row.
  expect(await page.evaluate<string>("getComputedStyle(document.querySelector('.opblock-summary')).display")).toBe(
    "flex",
  );

  // Opened: the webhook's verification text, its three headers and its example body render too.
  await webhook.click();
  const opened = page.locator(".opblock.is-open").filter({ hasText: "contact.created" }).first();
  await expect
    .poll(() => opened.getByText("webhook-signature", { exact: true }).isVisible(), { timeout: 10_000 })
    .toBe(true);
  const text = await opened.innerText();
  for (const words of ["webhook-id", "webhook-timestamp", "5 minutes", "410", "first_name"])
    expect(text).toContain(words);
  await page.screenshot({ path: path.join(SHOTS, "docs.png"), fullPage: true });

  expect(await violations(page)).toEqual([]);
  expect(problems).toEqual([]);
  expect(offHost).toEqual([]);
  await context.close();
}, 60_000);
