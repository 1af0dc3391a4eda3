// An authorization request carried through the pages as a browser does:
// /oauth/authorize, the login form, the consent page, Allow; the code the
// browser is sent back with. For suites whose client is not one the
// platform registered (a self-registered one, a metadata document's).
import { createHash, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { cookieHeader, hiddenFields, storeCookies } from "./html-forms.js";

export { hiddenFields } from "./html-forms.js";

/** A PKCE pair (RFC 7636 §4.1, §4.2: S256). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export interface AuthorizationRun {
  /** The consent page's HTML. */
  consentHtml: string;
  /** The browser's cookies, the session's and the forms' (a Cookie header). */
  cookie: string;
  /** Posts the consent page's form with this decision; the answer (a 303). */
  decide(decision: "allow" | "deny"): Promise<Response>;
}

/** From GET /oauth/authorize to the consent page, logging the member in on the way. */
export async function toConsentPage(
  base: string,
  query: Record<string, string>,
  member: { email: string; password: string },
): Promise<AuthorizationRun> {
  const jar = new Map<string, string>();
  const go = async (path: string, init: RequestInit = {}) => {
    const cookie = cookieHeader(jar);
    const res = await fetch(new URL(path, base), {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), ...(cookie ? { cookie } : {}) },
    });
    storeCookies(jar, res);
    return res;
  };
  const post = (path: string, fields: Record<string, string>) =>
    go(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString(),
    });

  const start = await go(`/oauth/authorize?${new URLSearchParams({ response_type: "code", ...query })}`);
  expect(start.status, await start.clone().text()).toBe(303);
  const interaction = start.headers.get("location")!;
  const loginPage = await go(interaction);
  expect(loginPage.status).toBe(200);
  const { csrf_token, form_token } = hiddenFields(await loginPage.text());
  const login = await post(`${interaction}/login`, {
    csrf_token: csrf_token!,
    form_token: form_token!,
    email: member.email,
    password: member.password,
  });
  expect(login.status).toBe(303);
  const consent = await go(interaction);
  expect(consent.status).toBe(200);
  const consentHtml = await consent.text();
  return {
    consentHtml,
    cookie: cookieHeader(jar),
    decide: (decision) => post("/oauth/authorize/consent", { ...hiddenFields(consentHtml), decision }),
  };
}

/** The whole request with Allow: the code from the redirect (after checking state). */
export async function authorizationCode(
  base: string,
  query: Record<string, string>,
  member: { email: string; password: string },
): Promise<string> {
  const run = await toConsentPage(base, { state: "st", ...query }, member);
  const res = await run.decide("allow");
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get("location")!);
  expect(location.searchParams.get("state")).toBe("st");
  return location.searchParams.get("code")!;
}
