// The OAuth pages' suites: the page platform (support/page-platform.ts), two
// registered clients (one whose name is hostile HTML), and the helpers that
// read a page as a browser does. Each suite file calls usePagesSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { startPagePlatform, type PagePlatform } from "./page-platform.js";

export const HOSTILE = "<script>alert(1)</script>";
export const REDIRECT = "https://client.example/cb";
export const CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export let platform: PagePlatform;
export let hostile: { clientId: string };
export let good: { clientId: string };

export const url = (path: string) => new URL(path, platform.base).href;

export function get(path: string, cookie?: string): Promise<Response> {
  return fetch(url(path), { redirect: "manual", headers: cookie ? { cookie } : {} });
}

export function postForm(path: string, fields: Record<string, string>, cookie?: string): Promise<Response> {
  return fetch(url(path), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
}

export const decodeEntities = (s: string) =>
  s
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

/** The value of a form's hidden input. */
export function hidden(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no input ${name} in the page`);
  return decodeEntities(match[1]!);
}

export function authorizePath(clientId: string, extra: Record<string, string> = {}): string {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    state: "st-1",
    ...extra,
  });
  return `/oauth/authorize?${q}`;
}

/** "name=value" of the session cookie a response sets. */
export function sessionCookie(res: Response, name = "bizcard_session"): string {
  const set = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  if (!set) throw new Error(`no ${name} cookie set`);
  return set.split(";")[0]!;
}

/** "name=value" of the form cookie a page sets when the browser has none (gateway/form-guard.ts). */
export const formCookie = (res: Response, name = "bizcard_form") => sessionCookie(res, name);

/** The form cookie alone of a Cookie header: a browser whose session ended still has it. */
export const formCookieOf = (cookie: string) => cookie.split("; ").find((c) => c.startsWith("bizcard_form="))!;

export function expectPageHeaders(res: Response, csp = CSP): void {
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expect(res.headers.get("content-security-policy")).toBe(csp);
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(res.headers.get("referrer-policy")).toBe("no-referrer");
  expect(res.headers.get("x-content-type-options")).toBe("nosniff");
}

/** An authorization request up to its interaction's page path. */
export async function startAuthorization(clientId: string, extra: Record<string, string> = {}): Promise<string> {
  const res = await get(authorizePath(clientId, extra));
  expect(res.status).toBe(303);
  const location = res.headers.get("location")!;
  expect(location).toMatch(/^\/oauth\/interaction\/[^/?#]+$/);
  return location;
}

/** Logs the member in on an interaction's login page; the browser's cookies then: its session's and its forms'. */
export async function login(interaction: string): Promise<string> {
  const page = await get(interaction);
  expect(page.status).toBe(200);
  const form = formCookie(page);
  const html = await page.text();
  const res = await postForm(
    `${interaction}/login`,
    {
      csrf_token: hidden(html, "csrf_token"),
      form_token: hidden(html, "form_token"),
      email: platform.member.email,
      password: platform.member.password,
    },
    form,
  );
  expect(res.status).toBe(303);
  return `${sessionCookie(res)}; ${form}`;
}

/** An authorization request up to its consent page: the page, its path, the cookie. */
export async function consentPage(clientId: string, extra: Record<string, string> = {}) {
  const interaction = await startAuthorization(clientId, extra);
  const cookie = await login(interaction);
  const res = await get(interaction, cookie);
  expect(res.status).toBe(200);
  return { res, html: await res.text(), interaction, cookie };
}

export function consentFields(html: string, decision: string): Record<string, string> {
  const fields: Record<string, string> = { decision };
  for (const name of [
    "interaction_id",
    "csrf_token",
    "form_token",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "response_type",
    "code_challenge",
    "code_challenge_method",
  ]) {
    try {
      fields[name] = hidden(html, name);
    } catch {
      // Absent from the request: absent from the form.
    }
  }
  return fields;
}

/** Registers the file's platform: started before its tests, stopped after. */
export function usePagesSuite(): void {
  beforeAll(async () => {
    platform = await startPagePlatform("pages");
    hostile = await platform.createClient(HOSTILE, [REDIRECT]);
    good = await platform.createClient("Good App", [REDIRECT, "https://other.example/return"], {
      scopes: ["organisation:read", "webhooks:read"],
    });
  });

  afterAll(async () => {
    await platform?.stop();
  });
}
