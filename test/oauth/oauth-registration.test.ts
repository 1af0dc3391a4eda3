// Dynamic client registration (RFC 7591) at POST /oauth/register, as an
// agent uses it: turned on, advertised, its answer (RFC 7591 §3.2.1) parsed
// by the MCP SDK, the registered client carried through the authorization
// code flow; bad metadata refused with RFC 7591 §3.2.2's codes and nothing
// stored; native and web rules; the limit per address. Turned off: 404 and
// not advertised. Each test registers from addresses of its own
// (X-Forwarded-For from a trusted loopback proxy), so the limit of one test
// never reaches another.
import { Code, ConnectError } from "@connectrpc/connect";
import { discoverAuthorizationServerMetadata, registerClient } from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, ClientRegistration } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { expectError } from "../support/api-client.js";
import { authorizationCode, pkce } from "../support/browser-authorization.js";
import { createAuthApp, startPlatform, type Platform } from "../support/platform.js";

const MEMBER = { email: "owner@register.test", password: "correct horse battery" };
const LIMIT = 4;
const LOOPBACK_REDIRECT = "http://127.0.0.1:41234/callback";

let platform: Platform;
let base: string;
let addressCount = 0;
/** An address no other registration of the file used. */
const freshAddress = () => `198.51.100.${++addressCount}`;

beforeAll(async () => {
  platform = await startPlatform({
    auth: true,
    config: { OAUTH_DYNAMIC_REGISTRATION: "true", OAUTH_REGISTRATION_LIMIT: String(LIMIT) },
    gateway: { publicUrlPort: true, bus: true, trustedProxies: ["127.0.0.1"] },
    member: { organisation: "Register Cards", ...MEMBER },
  });
  base = platform.base;
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

function register(body: unknown, address = freshAddress(), contentType = "application/json"): Promise<Response> {
  return fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": contentType, "x-forwarded-for": address },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function registered(body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await register(body);
  const json = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(json)).toBe(201);
  return json;
}

const clientCount = async () => (await platform.auth.client(AuthService).listClients({})).clients.length;

async function token(fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("registration turned on", () => {
  it("is advertised, and the MCP SDK discovers it, registers and parses the answer", async () => {
    const metadata = await discoverAuthorizationServerMetadata(base);
    expect(metadata?.registration_endpoint).toBe(`${base}/oauth/register`);
    const address = freshAddress();
    const info = await registerClient(base, {
      metadata,
      clientMetadata: {
        client_name: "SDK Agent",
        redirect_uris: ["http://localhost:33418/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      scope: "organisation:read contacts:read",
      fetchFn: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), "x-forwarded-for": address } }),
    });
    expect(info.client_id).toMatch(/^bc_/);
    expect(info.client_secret).toBeUndefined();
    expect(info.redirect_uris).toEqual(["http://localhost:33418/callback"]);
    expect(info.grant_types).toEqual(["authorization_code", "refresh_token"]);
    expect(info.scope).toBe("organisation:read contacts:read");
    const { client } = await platform.auth.client(AuthService).getClient({ clientId: info.client_id });
    expect(client!.registration).toBe(ClientRegistration.DYNAMIC);
    expect(client!.applicationType).toBe("native");
    expect(client!.tokenEndpointAuthMethod).toBe("none");
  });

  it("answers 201, no-store, with the RFC 7591 §3.2.1 fields and the defaults filled in", async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await register({ redirect_uris: ["https://app.example/cb"], client_uri: "https://app.example/", logo_uri: "https://app.example/l.png", contacts: ["a@app.example"] });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("pragma")).toBe("no-cache");
    const body = (await res.json()) as Record<string, unknown>;
    // Confidential by default (client_secret_basic), with a secret that does not expire.
    expect(body).toEqual({
      client_id: expect.stringMatching(/^bc_/),
      client_secret: expect.stringMatching(/^bcs_/),
      client_secret_expires_at: 0,
      client_id_issued_at: expect.any(Number),
      redirect_uris: ["https://app.example/cb"],
      token_endpoint_auth_method: "client_secret_basic",
      grant_types: ["authorization_code"],
      response_types: ["code"],
      client_name: "app.example",
      client_uri: "https://app.example/",
      scope: expect.stringContaining("organisation:read"),
      application_type: "web",
    });
    expect(body.client_id_issued_at).toBeGreaterThanOrEqual(before);
  });

  it("a public client goes through the authorization code flow with PKCE, and refreshes", async () => {
    const client = await registered({
      client_name: "Loopback Agent",
      redirect_uris: [LOOPBACK_REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
    });
    const clientId = client.client_id as string;
    const { verifier, challenge } = pkce();
    const query = { client_id: clientId, redirect_uri: LOOPBACK_REDIRECT, scope: "organisation:read", code_challenge: challenge, code_challenge_method: "S256" };
    const code = await authorizationCode(base, query, MEMBER);
    const exchanged = await token({ grant_type: "authorization_code", code, redirect_uri: LOOPBACK_REDIRECT, code_verifier: verifier, client_id: clientId });
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(exchanged.body.scope).toBe("organisation:read");
    const me = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${exchanged.body.access_token}` } });
    expect(me.status).toBe(200);
    const refreshed = await token({ grant_type: "refresh_token", refresh_token: exchanged.body.refresh_token as string, client_id: clientId });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
  });

  it("a native public client registered with a portless loopback URI may redirect to any port of it (RFC 8252 §7.3)", async () => {
    const client = await registered({ redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none" });
    const { challenge } = pkce();
    const code = await authorizationCode(
      base,
      { client_id: client.client_id as string, redirect_uri: "http://127.0.0.1:51515/callback", code_challenge: challenge, code_challenge_method: "S256" },
      MEMBER,
    );
    expect(code).toMatch(/^bcc_/);
  });

  it("a member sent as null counts as left out", async () => {
    const client = await registered({ redirect_uris: ["https://null.example/cb"], client_uri: null, client_name: null, grant_types: null, application_type: null });
    expect(client).not.toHaveProperty("client_uri");
    expect(client.client_name).toBe("null.example");
    expect(client.grant_types).toEqual(["authorization_code"]);
    expect(client.application_type).toBe("web");
  });

  it("a public client without PKCE is refused at the authorization endpoint", async () => {
    const client = await registered({ redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: "none" });
    const res = await fetch(`${base}/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id as string, redirect_uri: LOOPBACK_REDIRECT, state: "s" })}`, {
      redirect: "manual",
    });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(LOOPBACK_REDIRECT);
    expect(location.searchParams.get("error")).toBe("invalid_request");
  });

  it("a confidential client (client_secret_post) exchanges its code with the secret in the body; a wrong secret is invalid_client", async () => {
    const client = await registered({ client_name: "Web App", redirect_uris: ["https://web.example/cb"], token_endpoint_auth_method: "client_secret_post" });
    expect(client.token_endpoint_auth_method).toBe("client_secret_post");
    const clientId = client.client_id as string;
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(
      base,
      { client_id: clientId, redirect_uri: "https://web.example/cb", scope: "organisation:read", code_challenge: challenge, code_challenge_method: "S256" },
      MEMBER,
    );
    const wrong = await token({ grant_type: "authorization_code", code, redirect_uri: "https://web.example/cb", code_verifier: verifier, client_id: clientId, client_secret: "bcs_wrong" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("invalid_client");
    const right = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: "https://web.example/cb",
      code_verifier: verifier,
      client_id: clientId,
      client_secret: client.client_secret as string,
    });
    expect(right.status, JSON.stringify(right.body)).toBe(200);
    // Registered without refresh_token: none issued.
    expect(right.body.refresh_token).toBeUndefined();
  });

  it("a self-registered client cannot use client_credentials even with its secret", async () => {
    const client = await registered({ redirect_uris: ["https://cc.example/cb"] });
    // Its secret with HTTP Basic, the method it registered by default (client_secret_basic).
    const credentials = Buffer.from(`${encodeURIComponent(client.client_id as string)}:${encodeURIComponent(client.client_secret as string)}`).toString("base64");
    const res = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${credentials}` },
      body: new URLSearchParams({ grant_type: "client_credentials" }).toString(),
    });
    await expectError(res, 400, "unauthorized_client");
  });
});

describe("bad metadata changes nothing", () => {
  const cases: [string, unknown, string, RegExp][] = [
    ["redirect_uris not an array", { redirect_uris: "https://a.example/cb" }, "invalid_client_metadata", /^redirect_uris: expected an array of strings$/],
    ["redirect_uris of numbers", { redirect_uris: [1] }, "invalid_client_metadata", /^redirect_uris: expected an array of strings$/],
    ["client_name a number", { redirect_uris: ["https://a.example/cb"], client_name: 7 }, "invalid_client_metadata", /^client_name: expected a string$/],
    ["a body that is not an object", [], "invalid_client_metadata", /JSON object/],
    ["no redirect_uris", { client_name: "x" }, "invalid_redirect_uri", /at least one/],
    ["a relative redirect URI", { redirect_uris: ["/cb"] }, "invalid_redirect_uri", /not an absolute URI/],
    ["a fragment", { redirect_uris: ["https://a.example/cb#f"] }, "invalid_redirect_uri", /fragment/],
    ["http off loopback", { redirect_uris: ["http://a.example/cb"] }, "invalid_redirect_uri", /https/],
    ["a javascript: URI", { redirect_uris: ["javascript:alert(1)"] }, "invalid_redirect_uri", /https URL/],
    ["an unknown auth method", { redirect_uris: ["https://a.example/cb"], token_endpoint_auth_method: "private_key_jwt" }, "invalid_client_metadata", /token_endpoint_auth_method/],
    ["client_credentials", { redirect_uris: ["https://a.example/cb"], grant_types: ["authorization_code", "client_credentials"] }, "invalid_client_metadata", /client_credentials/],
    ["implicit", { redirect_uris: ["https://a.example/cb"], grant_types: ["implicit"] }, "invalid_client_metadata", /unsupported implicit/],
    ["refresh_token alone", { redirect_uris: ["https://a.example/cb"], grant_types: ["refresh_token"] }, "invalid_client_metadata", /authorization_code/],
    ["response type token", { redirect_uris: ["https://a.example/cb"], response_types: ["token"] }, "invalid_client_metadata", /response_types/],
    ["an unknown scope", { redirect_uris: ["https://a.example/cb"], scope: "contacts:read contacts:delete" }, "invalid_client_metadata", /^scope: unknown contacts:delete/],
    ["an unknown application_type", { redirect_uris: ["https://a.example/cb"], application_type: "desktop" }, "invalid_client_metadata", /application_type/],
    ["a client_uri that is not https", { redirect_uris: ["https://a.example/cb"], client_uri: "javascript:alert(1)" }, "invalid_client_metadata", /client_uri/],
    ["an empty client_name", { redirect_uris: ["https://a.example/cb"], client_name: "  " }, "invalid_client_metadata", /client_name/],
  ];
  it.each(cases)("%s", async (_name, body, error, description) => {
    const before = await clientCount();
    const res = await register(body);
    expect(res.headers.get("cache-control")).toBe("no-store");
    await expectError(res, 400, error, description);
    expect(await clientCount()).toBe(before);
  });

  it("a body that is not JSON is 415, naming JSON only", async () => {
    const jsonOnly = /^send the (client metadata|body) as application\/json$/;
    await expectError(await register("redirect_uris=https%3A%2F%2Fa.example%2Fcb", freshAddress(), "application/x-www-form-urlencoded"), 415, "unsupported_media_type", jsonOnly);
    await expectError(await register("redirect_uris=https%3A%2F%2Fa.example%2Fcb", freshAddress(), "text/plain"), 415, "unsupported_media_type", jsonOnly);
  });
});

describe("native and web applications", () => {
  it("left out, application_type is native when every redirect URI is loopback or a private-use scheme, else web", async () => {
    expect((await registered({ redirect_uris: ["http://localhost:3000/callback"], token_endpoint_auth_method: "none" })).application_type).toBe("native");
    expect((await registered({ redirect_uris: ["com.example.agent:/cb"], token_endpoint_auth_method: "none" })).application_type).toBe("native");
    expect((await registered({ redirect_uris: ["https://app.example/cb"] })).application_type).toBe("web");
  });

  it("native allows loopback and private-use schemes, and names the client by the redirect's host when it gave no name", async () => {
    const client = await registered({ application_type: "native", redirect_uris: ["com.example.agent:/cb", "http://[::1]/cb"], token_endpoint_auth_method: "none" });
    expect(client.client_name).toBe("com.example.agent");
  });

  it("web refuses loopback and private-use redirect URIs; native refuses https off loopback", async () => {
    await expectError(await register({ application_type: "web", redirect_uris: ["http://127.0.0.1:5000/cb"] }), 400, "invalid_redirect_uri", /native/);
    await expectError(await register({ application_type: "web", redirect_uris: ["com.example.agent:/cb"], token_endpoint_auth_method: "none" }), 400, "invalid_redirect_uri", /native/);
    await expectError(await register({ application_type: "native", redirect_uris: ["https://app.example/cb"] }), 400, "invalid_redirect_uri", /loopback/);
    // Mixed, left out: web, so the loopback one is refused.
    await expectError(await register({ redirect_uris: ["https://app.example/cb", "http://localhost/cb"] }), 400, "invalid_redirect_uri", /native/);
  });

  it("a private-use scheme is for public clients only", async () => {
    await expectError(await register({ redirect_uris: ["com.example.agent:/cb"] }), 400, "invalid_redirect_uri", /public clients only/);
  });
});

describe("the limit per address", () => {
  it(`answers 429 with Retry-After past ${LIMIT} registrations an hour from one address; others still register`, async () => {
    const address = freshAddress();
    // Refused registrations count too.
    await expectError(await register({ redirect_uris: ["/bad"] }, address), 400, "invalid_redirect_uri");
    for (let i = 1; i < LIMIT; i++) expect((await register({ redirect_uris: ["https://limit.example/cb"] }, address)).status).toBe(201);
    const before = await clientCount();
    const refused = await register({ redirect_uris: ["https://limit.example/cb"] }, address);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(refused.headers.get("cache-control")).toBe("no-store");
    await expectError(refused, 429, "rate_limited", /too many client registrations/);
    expect(await clientCount()).toBe(before);
    expect((await register({ redirect_uris: ["https://limit.example/cb"] })).status).toBe(201);
  });
});

describe("registration turned off", () => {
  it("POST /oauth/register is 404 and the metadata has no registration_endpoint", async () => {
    const gateway = await platform.addGateway({ config: { OAUTH_DYNAMIC_REGISTRATION: "false" } });
    try {
      const res = await fetch(`${gateway.base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ redirect_uris: ["https://a.example/cb"] }) });
      await expectError(res, 404, "not_found", "dynamic client registration is not enabled on this server");
      const metadata = (await (await fetch(`${gateway.base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      expect(metadata).not.toHaveProperty("registration_endpoint");
      expect(metadata.issuer).toBeTypeOf("string");
    } finally {
      await gateway.close();
    }
  });

  it("an auth service whose configuration says off refuses RegisterClient with NOT_FOUND", async () => {
    const off = await platform.startService(createAuthApp, platform.configWith({ OAUTH_DYNAMIC_REGISTRATION: "false" }));
    const before = await clientCount();
    const err = await off
      .client(AuthService)
      .registerClient({ redirectUris: ["https://a.example/cb"], presentFields: ["redirect_uris"] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect(await clientCount()).toBe(before);
  });
});
