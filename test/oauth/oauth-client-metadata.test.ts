// Client ID Metadata Documents: a client_id that is a URL names the client's
// metadata document, which the auth service fetches, checks and keeps as a
// client row (registration metadata_document). The whole flow over the
// gateway (authorize, login, consent, token with PKCE and no secret, refresh),
// the cache (Cache-Control within bounds; no refetch before expiry, one
// after), https with a private CA (OAUTH_CLIENT_METADATA_CA_FILE), and the
// off switch. The refusals: oauth-client-metadata-refusals.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, ClientRegistration } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { createAuthApp, startPlatform, type Platform } from "../support/platform.js";
import { pkcePair } from "../support/page-platform.js";
import {
  browser,
  formAction,
  hiddenFields,
  selfSignedCertificate,
  startDocumentServer,
  type DocumentServer,
} from "../support/metadata-documents.js";

const EMAIL = "owner@cimd.test";
const PASSWORD = "correct horse battery";
const REDIRECT_URI = "http://127.0.0.1:9876/callback";

let platform: Platform;
let documents: DocumentServer;
let tlsDocuments: DocumentServer;
let certFile: string;

/** A client metadata document for `url` (what an MCP client serves). */
const documentFor = (url: string, extra: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: "Agent Zed",
  client_uri: "https://agent.example/",
  redirect_uris: [REDIRECT_URI],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...extra,
});

beforeAll(async () => {
  const tls = selfSignedCertificate();
  certFile = tls.certFile;
  documents = await startDocumentServer();
  tlsDocuments = await startDocumentServer(tls);
  platform = await startPlatform({
    token: "m".repeat(40),
    config: { OAUTH_ALLOW_INSECURE_REDIRECTS: "true", OAUTH_CLIENT_METADATA_CA_FILE: certFile },
    auth: true,
    gateway: { publicUrlPort: true, bus: true },
    member: { organisation: "Metadata Cards", email: EMAIL, password: PASSWORD },
  });
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await documents?.close();
  await tlsDocuments?.close();
});

const authorizeUrl = (clientId: string, challenge: string, extra: Record<string, string> = {}) =>
  `/oauth/authorize?${new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: "organisation:read",
    state: "st4te",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...extra,
  }).toString()}`;

/** The authorization request, login and consent ("allow"): the callback URL and the consent page's HTML. */
async function authorizeAndAllow(clientId: string, challenge: string): Promise<{ callback: URL; consentHtml: string }> {
  const b = browser(platform.base);
  const start = await b.go(authorizeUrl(clientId, challenge));
  expect(start.status).toBe(303);
  const loginHtml = await (await b.go(start.headers.get("location")!)).text();
  const loggedIn = await b.submit(formAction(loginHtml), {
    ...hiddenFields(loginHtml),
    email: EMAIL,
    password: PASSWORD,
  });
  expect(loggedIn.status).toBe(303);
  const consent = await b.go(loggedIn.headers.get("location")!);
  expect(consent.status).toBe(200);
  const consentHtml = await consent.text();
  const decided = await b.submit(formAction(consentHtml), { ...hiddenFields(consentHtml), decision: "allow" });
  expect(decided.status).toBe(303);
  return { callback: new URL(decided.headers.get("location")!), consentHtml };
}

const token = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(`${platform.base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/** How long the kept copy of a document is used: metadata_expires_at - metadata_fetched_at, in seconds. */
async function keptFor(clientId: string): Promise<number> {
  const [row] = await platform.auth.app.orm.em
    .fork()
    .execute(
      `select extract(epoch from "metadata_expires_at" - "metadata_fetched_at")::int as "s" from "auth"."client" where "id" = ?`,
      [clientId],
    );
  return (row as { s: number }).s;
}

const expire = (clientId: string) =>
  platform.auth.app.orm.em
    .fork()
    .execute(`update "auth"."client" set "metadata_expires_at" = now() - interval '1 second' where "id" = ?`, [
      clientId,
    ]);

describe("a client_id that is a URL: the document is fetched and the client is public", () => {
  let refreshToken = "";
  let doc: ReturnType<DocumentServer["serve"]>;

  it("authorize, login, consent, then the code for tokens with PKCE and no secret; the client is a metadata document client", async () => {
    doc = documents.serve("/agents/zed.json", (url) => ({
      body: documentFor(url),
      headers: { "cache-control": "public, max-age=600" },
    }));
    const { verifier, challenge } = await pkcePair();
    const { callback, consentHtml } = await authorizeAndAllow(doc.url, challenge);
    expect(consentHtml).toContain("Agent Zed");
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);
    expect(callback.searchParams.get("state")).toBe("st4te");
    const code = callback.searchParams.get("code")!;
    expect(doc.fetches()).toBe(1);
    expect(doc.accept()).toEqual(["application/json"]);

    const res = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT_URI,
      client_id: doc.url,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
    const tokens = (await res.json()) as { access_token: string; refresh_token: string; scope: string };
    expect(tokens.access_token).toMatch(/^bca_/);
    expect(tokens.scope).toBe("organisation:read");
    refreshToken = tokens.refresh_token;
    const me = await fetch(`${platform.base}/oauth/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: platform.organisationId, name: "Metadata Cards" });

    const { client } = await platform.auth.client(AuthService).getClient({ clientId: doc.url });
    expect(client).toMatchObject({
      clientId: doc.url,
      name: "Agent Zed",
      registration: ClientRegistration.METADATA_DOCUMENT,
      clientUri: "https://agent.example/",
      public: true,
      tokenEndpointAuthMethod: "none",
      redirectUris: [REDIRECT_URI],
      grantTypes: ["authorization_code", "refresh_token"],
    });
    expect(await keptFor(doc.url)).toBe(600);
  });

  it("refresh with client_id only; a secret or client_credentials are refused (a public client)", async () => {
    const refreshed = await token({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: doc.url });
    expect(refreshed.status).toBe(200);
    refreshToken = ((await refreshed.json()) as { refresh_token: string }).refresh_token;
    const withSecret = await token({
      grant_type: "refresh_token",
      refresh_token: refreshToken,
      client_id: doc.url,
      client_secret: "guess",
    });
    expect(withSecret.status).toBe(401);
    expect(await withSecret.json()).toMatchObject({ error: "invalid_client" });
    const cc = await token({ grant_type: "client_credentials", client_id: doc.url });
    expect(cc.status).toBe(400);
    expect(await cc.json()).toMatchObject({ error: "unauthorized_client" });
    // The token side uses the kept row, expired or not: no fetch.
    expect(doc.fetches()).toBe(1);
  });

  it("PKCE is required: without code_challenge the error goes back to the (listed) redirect_uri", async () => {
    const res = await browser(platform.base).go(
      authorizeUrl(doc.url, "", { code_challenge_method: "" }).replace(/&code_challenge=&code_challenge_method=/, ""),
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT_URI);
    expect(location.searchParams.get("error")).toBe("invalid_request");
    expect(location.searchParams.get("error_description")).toMatch(/code_challenge is required/);
  });

  it("cached: no refetch before the kept copy expires, one after (and the new document is used)", async () => {
    const { challenge } = await pkcePair();
    const before = doc.fetches();
    const again = await browser(platform.base).go(authorizeUrl(doc.url, challenge));
    expect(again.status).toBe(303);
    expect(again.headers.get("location")).toMatch(/^\/oauth\/interaction\//);
    expect(doc.fetches()).toBe(before);

    documents.serve("/agents/zed.json", (url) => ({ body: documentFor(url, { client_name: "Agent Zed 2" }) }));
    await expire(doc.url);
    const { consentHtml } = await authorizeAndAllow(doc.url, challenge);
    expect(consentHtml).toContain("Agent Zed 2");
    const { client } = await platform.auth.client(AuthService).getClient({ clientId: doc.url });
    expect(client?.name).toBe("Agent Zed 2");
    // Without Cache-Control: an hour.
    expect(await keptFor(doc.url)).toBe(3600);
  });

  it("Cache-Control within bounds: no-store and small max-age are 5 minutes, a large one 24 hours", async () => {
    const { challenge } = await pkcePair();
    for (const [name, cacheControl, seconds] of [
      ["no-store", "no-store", 300],
      ["no-cache", "no-cache, max-age=9000", 300],
      ["short", "max-age=10", 300],
      ["long", "max-age=999999", 86_400],
    ] as const) {
      const d = documents.serve(`/cache/${name}.json`, (url) => ({
        body: documentFor(url),
        headers: { "cache-control": cacheControl },
      }));
      const res = await browser(platform.base).go(authorizeUrl(d.url, challenge));
      expect(res.status).toBe(303);
      expect(await keptFor(d.url)).toBe(seconds);
    }
  });

  it("two first uses at once: both succeed, one row", async () => {
    const { challenge } = await pkcePair();
    const d = documents.serve("/agents/twice.json", (url) => ({ body: documentFor(url), delayMs: 100 }));
    const answers = await Promise.all([1, 2, 3].map(() => browser(platform.base).go(authorizeUrl(d.url, challenge))));
    expect(answers.map((r) => r.status)).toEqual([303, 303, 303]);
    const [row] = await platform.auth.app.orm.em
      .fork()
      .execute(`select count(*)::int as "n" from "auth"."client" where "id" = ?`, [d.url]);
    expect((row as { n: number }).n).toBe(1);
  });
});

describe("https documents with a private CA (OAUTH_CLIENT_METADATA_CA_FILE)", () => {
  it("a document served over https by a certificate of the configured CA is fetched", async () => {
    const d = tlsDocuments.serve("/mcp-client.json", (url) => ({
      body: documentFor(url, { client_name: "TLS Agent" }),
    }));
    expect(d.url).toMatch(/^https:\/\/localhost:\d+\/mcp-client\.json$/);
    const { verifier, challenge } = await pkcePair();
    const { callback, consentHtml } = await authorizeAndAllow(d.url, challenge);
    expect(consentHtml).toContain("TLS Agent");
    const res = await token({
      grant_type: "authorization_code",
      code: callback.searchParams.get("code")!,
      redirect_uri: REDIRECT_URI,
      client_id: d.url,
      code_verifier: verifier,
    });
    expect(res.status).toBe(200);
  });

  it("without the CA file, the certificate is not trusted: an error page, never a redirect", async () => {
    const d = tlsDocuments.serve("/untrusted.json", (url) => ({ body: documentFor(url) }));
    const auth = await platform.startService(
      createAuthApp,
      platform.gatewayConfig({ OAUTH_CLIENT_METADATA_CA_FILE: "" }),
    );
    const gateway = await platform.addGateway({ config: { AUTH_RPC_URL: auth.server.url } });
    try {
      const { challenge } = await pkcePair();
      const res = await fetch(`${gateway.base}${authorizeUrl(d.url, challenge)}`, { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.text()).toMatch(
        /metadata document at https:\/\/localhost:\d+\/untrusted\.json could not be fetched: its TLS certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\)/,
      );
    } finally {
      await gateway.close();
      await auth.stop();
    }
  });
});

describe("OAUTH_CLIENT_METADATA_DOCUMENTS=false", () => {
  it("a URL client_id is an unknown client: nothing is fetched, and a document client kept from before is unknown too", async () => {
    const fresh = documents.serve("/off/new.json", (url) => ({ body: documentFor(url) }));
    const kept = documents.serve("/off/kept.json", (url) => ({ body: documentFor(url) }));
    const { verifier, challenge } = await pkcePair();
    const { callback } = await authorizeAndAllow(kept.url, challenge);
    const issued = await token({
      grant_type: "authorization_code",
      code: callback.searchParams.get("code")!,
      redirect_uri: REDIRECT_URI,
      client_id: kept.url,
      code_verifier: verifier,
    });
    const { refresh_token } = (await issued.json()) as { refresh_token: string };

    const auth = await platform.startService(
      createAuthApp,
      platform.gatewayConfig({ OAUTH_CLIENT_METADATA_DOCUMENTS: "false" }),
    );
    const gateway = await platform.addGateway({ config: { AUTH_RPC_URL: auth.server.url } });
    try {
      for (const d of [fresh, kept]) {
        const res = await fetch(`${gateway.base}${authorizeUrl(d.url, challenge)}`, { redirect: "manual" });
        expect(res.status).toBe(400);
        expect(res.headers.get("location")).toBeNull();
        expect(await res.text()).toMatch(/unknown client_id/);
      }
      expect(fresh.fetches()).toBe(0);
      const refresh = await fetch(`${gateway.base}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token, client_id: kept.url }).toString(),
      });
      expect(refresh.status).toBe(401);
      expect(await refresh.json()).toMatchObject({ error: "invalid_client" });
    } finally {
      await gateway.close();
      await auth.stop();
    }
  });
});
