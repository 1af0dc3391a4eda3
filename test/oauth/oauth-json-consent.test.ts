// The consent POST as JSON needs what the form needs: the interaction the
// consent page showed and that page's CSRF token. Without them (or with a
// wrong token) no code is issued, whatever the session cookie says: a
// session alone does not show that the member saw and allowed this request.
// Refusals are the form's (400 without interaction_id, 403 for the CSRF
// token), in the JSON error shape.
import { Code, ConnectError } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, ConsentDecision } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { startPagePlatform, type PagePlatform } from "../support/page-platform.js";

const REDIRECT = "https://client.example/cb";

let platform: PagePlatform;
let clientId: string;

beforeAll(async () => {
  platform = await startPagePlatform("json-consent");
  ({ clientId } = await platform.createClient("JSON App", [REDIRECT], { scopes: ["organisation:read"] }));
});

afterAll(async () => {
  await platform?.stop();
});

const url = (path: string) => new URL(path, platform.base).href;

const decodeEntities = (s: string) =>
  s
    .replaceAll("&quot;", '"')
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");

function hidden(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`no input ${name} in the page`);
  return decodeEntities(match[1]!);
}

/** An authorization request up to its consent page, logged in: the page's fields and the session cookie. */
async function consentPage(): Promise<{ fields: Record<string, string>; cookie: string }> {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    scope: "organisation:read",
    state: "js-1",
  });
  const start = await fetch(url(`/oauth/authorize?${q}`), { redirect: "manual" });
  expect(start.status).toBe(303);
  const interaction = start.headers.get("location")!;
  const shown = await fetch(url(interaction));
  const form = shown.headers.getSetCookie()[0]!.split(";")[0]!;
  const loginPage = await shown.text();
  const login = await fetch(url(`${interaction}/login`), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: form },
    body: new URLSearchParams({
      csrf_token: hidden(loginPage, "csrf_token"),
      form_token: hidden(loginPage, "form_token"),
      email: platform.member.email,
      password: platform.member.password,
    }).toString(),
  });
  expect(login.status).toBe(303);
  const cookie = login.headers
    .getSetCookie()
    .find((c) => c.startsWith("bizcard_session="))!
    .split(";")[0]!;
  const page = await fetch(url(interaction), { headers: { cookie } });
  expect(page.status).toBe(200);
  const html = await page.text();
  const fields: Record<string, string> = { decision: "allow" };
  for (const name of ["interaction_id", "csrf_token", "client_id", "redirect_uri", "scope", "state", "response_type"])
    fields[name] = hidden(html, name);
  return { fields, cookie };
}

const postJson = (body: Record<string, string>, cookie: string) =>
  fetch(url("/oauth/authorize/consent"), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify(body),
  });

const codes = async () =>
  (
    await (platform.auth.app as unknown as { orm: MikroORM }).orm.em
      .fork()
      .execute(`select count(*)::int as "n" from "auth"."authorization_code"`)
  )[0].n as number;

async function expectRefused(res: Response, status: number, error: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get("location")).toBeNull();
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ error });
  expect(typeof body.error_description).toBe("string");
}

describe("a JSON consent", () => {
  it("without the interaction and its CSRF token issues no code (400)", async () => {
    const { fields, cookie } = await consentPage();
    const before = await codes();
    const { interaction_id: _i, csrf_token: _c, ...request } = fields;
    await expectRefused(await postJson(request, cookie), 400, "invalid_request");
    const { interaction_id: _j, ...withCsrfOnly } = fields;
    await expectRefused(await postJson(withCsrfOnly, cookie), 400, "invalid_request");
    expect(await codes()).toBe(before);
  });

  it("without the CSRF token, or with a wrong one, issues no code (403), and the interaction stays usable", async () => {
    const { fields, cookie } = await consentPage();
    const before = await codes();
    const { csrf_token: csrf, ...withoutCsrf } = fields;
    await expectRefused(await postJson(withoutCsrf, cookie), 403, "invalid_csrf_token");
    await expectRefused(
      await postJson({ ...fields, csrf_token: "x".repeat(csrf!.length) }, cookie),
      403,
      "invalid_csrf_token",
    );
    await expectRefused(await postJson({ ...fields, csrf_token: "nope" }, cookie), 403, "invalid_csrf_token");
    expect(await codes()).toBe(before);

    // With both, as the page gave them: the code.
    const ok = await postJson(fields, cookie);
    expect(ok.status).toBe(303);
    const location = new URL(ok.headers.get("location")!);
    expect(location.searchParams.get("code")).toMatch(/^bcc_/);
    expect(location.searchParams.get("state")).toBe("js-1");
    expect(await codes()).toBe(before + 1);
  });

  it("DecideConsent without an interaction is refused by the auth service itself", async () => {
    const { fields, cookie } = await consentPage();
    const before = await codes();
    const err = await platform.auth
      .client(AuthService)
      .decideConsent({
        sessionId: cookie.slice("bizcard_session=".length),
        decision: ConsentDecision.ALLOW,
        parameters: {
          responseType: "code",
          clientId,
          redirectUri: REDIRECT,
          scope: "organisation:read",
          state: fields.state!,
        },
      })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(await codes()).toBe(before);
  });
});
