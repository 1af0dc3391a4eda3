// What the audience tests (test/oauth-audience*.test.ts) share: a platform
// whose gateway listens on its PUBLIC_URL (so the resource identifiers are
// real URLs of it), a browser that goes through login and consent, and the
// token, introspection and /oauth/me requests as a client sends them.
import { createHash, randomBytes } from "node:crypto";
import { expect } from "vitest";
import { startPlatform, type Platform } from "./platform.js";
import { browser, formAction, hiddenFieldList } from "./html-forms.js";

export const EMAIL = "owner@audience.test";
export const PASSWORD = "correct horse battery";
export const REDIRECT_URI = "http://127.0.0.1:8765/callback";
const TOKEN = "a".repeat(40);

export interface AudienceSuite {
  platform: Platform;
  /** PUBLIC_URL: the REST API's resource identifier (and the issuer). */
  api: string;
  /** PUBLIC_URL/mcp: the MCP endpoint's resource identifier. */
  mcp: string;
  /** A confidential client with the authorization_code and refresh_token grants. */
  web: { id: string; secret: string };
  /** A confidential client the organisation owns (client_credentials). */
  service: { id: string; secret: string };
}

export async function startAudienceSuite(organisation: string): Promise<AudienceSuite> {
  const platform = await startPlatform({
    token: TOKEN,
    auth: true,
    gateway: { publicUrlPort: true },
    member: { organisation, email: EMAIL, password: PASSWORD },
  });
  const web = await platform.createClient("Audience Web", [REDIRECT_URI], {
    scopes: ["organisation:read", "contacts:read"],
  });
  const service = await platform.createClient("Audience Service", [REDIRECT_URI], {
    scopes: ["organisation:read"],
    ownerOrganisationId: platform.organisationId,
    grantTypes: ["client_credentials"],
  });
  return {
    platform,
    api: platform.base,
    mcp: `${platform.base}/mcp`,
    web: { id: web.clientId, secret: web.clientSecret },
    service: { id: service.clientId, secret: service.clientSecret },
  };
}

export { browser } from "./html-forms.js";

export interface Authorized {
  /** Where the browser was sent back to (with code, or error). */
  callback: URL;
  verifier: string;
  /** The consent page's hidden fields (when there was one). */
  consentFields: [string, string][];
}

/** How the consent is posted: the page's form as is (the default), or otherwise. */
export type Decide = (b: ReturnType<typeof browser>, action: string, fields: [string, string][]) => Promise<Response>;

const submitForm: Decide = (b, action, fields) => b.submit(action, [...fields, ["decision", "allow"]]);

/**
 * An authorization request with these extra parameters (resource repeated as
 * given), through login and consent as a browser submits them.
 */
export async function authorize(
  suite: AudienceSuite,
  extra: [string, string][],
  decide: Decide = submitForm,
): Promise<Authorized> {
  const verifier = randomBytes(32).toString("base64url");
  const query = new URLSearchParams([
    ["response_type", "code"],
    ["client_id", suite.web.id],
    ["redirect_uri", REDIRECT_URI],
    ["scope", "organisation:read"],
    ["state", "aud-state"],
    ["code_challenge", createHash("sha256").update(verifier).digest("base64url")],
    ["code_challenge_method", "S256"],
    ...extra,
  ]);
  return { ...(await consentAt(suite, `/oauth/authorize?${query}`, decide)), verifier };
}

/** An authorization URL, through login and consent in a fresh browser. */
export async function consentAt(
  suite: AudienceSuite,
  authorizationUrl: string,
  decide: Decide = submitForm,
): Promise<Omit<Authorized, "verifier">> {
  const b = browser(suite.api);
  const start = await b.go(authorizationUrl);
  expect(start.status).toBe(303);
  const location = start.headers.get("location")!;
  if (!location.startsWith("/oauth/interaction/")) return { callback: new URL(location), consentFields: [] };
  const loginHtml = await (await b.go(location)).text();
  const loggedIn = await b.submit(formAction(loginHtml), [
    ...hiddenFieldList(loginHtml),
    ["email", EMAIL],
    ["password", PASSWORD],
  ]);
  expect(loggedIn.status).toBe(303);
  const consent = await b.go(loggedIn.headers.get("location")!);
  expect(consent.status).toBe(200);
  const consentHtml = await consent.text();
  const consentFields = hiddenFieldList(consentHtml);
  const decided = await decide(b, formAction(consentHtml), consentFields);
  expect(decided.status, await decided.clone().text()).toBe(303);
  return { callback: new URL(decided.headers.get("location")!), consentFields };
}

export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** POST /oauth/token as a form, with HTTP Basic for the client. */
export async function tokenRequest(
  suite: AudienceSuite,
  client: { id: string; secret: string },
  fields: [string, string][],
): Promise<TokenAnswer> {
  const res = await fetch(`${suite.api}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`,
    },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

/** The code of an authorization request with these resources, exchanged with these resources. */
export async function codeTokens(suite: AudienceSuite, asked: string[], exchanged: string[]): Promise<TokenAnswer> {
  const { callback, verifier } = await authorize(
    suite,
    asked.map((r) => ["resource", r]),
  );
  const code = callback.searchParams.get("code");
  expect(code, callback.href).toMatch(/^bcc_/);
  return tokenRequest(suite, suite.web, [
    ["grant_type", "authorization_code"],
    ["code", code!],
    ["redirect_uri", REDIRECT_URI],
    ["code_verifier", verifier],
    ...exchanged.map((r): [string, string] => ["resource", r]),
  ]);
}

/** RFC 7662 introspection by the web client. */
export async function introspect(suite: AudienceSuite, token: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${suite.api}/oauth/introspect`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${suite.web.id}:${suite.web.secret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

export const me = (suite: AudienceSuite, token: string) =>
  fetch(`${suite.api}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });

/** A token endpoint refusal: 400, the RFC 6749 §5.2 body, no-store. */
export function expectTokenError(answer: TokenAnswer, error: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(answer.headers.get("cache-control")).toBe("no-store");
  expect(answer.body.error).toBe(error);
  expect(typeof answer.body.error_description).toBe("string");
}
