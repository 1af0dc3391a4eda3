// The whole authorization-code flow driven by a strict client library
// (oauth4webapi), over real HTTP against the gateway in front of the real
// services (PostgreSQL, NATS): discovery (the library validates the RFC 8414
// document), PKCE S256, the login and consent pages as a browser submits
// them (CSRF token read from the page, session cookie kept), the code
// exchange with iss checked (RFC 9207), GET /oauth/me, refresh (rotation),
// introspection and revocation.
import type { AddressInfo } from "node:net";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/processes.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { browser, formAction, hiddenFields } from "../support/html-forms.js";

const TOKEN = "f".repeat(40);
const EMAIL = "owner@flow.test";
const PASSWORD = "correct horse battery";
const REDIRECT_URI = "http://127.0.0.1:8765/callback";
const insecure = { [oauth.allowInsecureRequests]: true } as const;

let platform: Platform;
let issuer: string;
let orgId: string;
let client: { id: string; secret: string };

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    gateway: { publicUrlPort: true, bus: true },
    member: { organisation: "Flow Cards", email: EMAIL, password: PASSWORD },
  });
  issuer = platform.base;
  expect(`http://127.0.0.1:${(platform.gateway.server.address() as AddressInfo).port}`).toBe(issuer);
  orgId = platform.organisationId;
  const registered = await platform.createClient("Strict Zap", [REDIRECT_URI]);
  client = { id: registered.clientId, secret: registered.clientSecret };
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

describe("the authorization-code flow with oauth4webapi", () => {
  it("discovery, PKCE, login, consent, code, /oauth/me, refresh, introspection, revocation", async () => {
    // Discovery: the library checks the document (issuer identical, endpoints, ...).
    const as = await oauth.processDiscoveryResponse(
      new URL(issuer),
      await oauth.discoveryRequest(new URL(issuer), { algorithm: "oauth2", ...insecure }),
    );
    expect(as.code_challenge_methods_supported).toEqual(["S256"]);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    const c: oauth.Client = { client_id: client.id };
    const clientAuth = oauth.ClientSecretBasic(client.secret);

    // The authorization request with PKCE and state.
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorize = new URL(as.authorization_endpoint!);
    authorize.search = new URLSearchParams({
      response_type: "code",
      client_id: client.id,
      redirect_uri: REDIRECT_URI,
      scope: "organisation:read webhooks:read",
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    }).toString();

    // The browser: the request, the login page and its form, the consent page and its form.
    const b = browser(issuer);
    const start = await b.go(authorize.href);
    expect(start.status).toBe(303);
    const interaction = start.headers.get("location")!;
    expect(interaction).toMatch(/^\/oauth\/interaction\/[^/]+$/);
    const loginPage = await b.go(interaction);
    expect(loginPage.status).toBe(200);
    const loginHtml = await loginPage.text();
    const loginAction = formAction(loginHtml);
    const loggedIn = await b.submit(loginAction, { ...hiddenFields(loginHtml), email: EMAIL, password: PASSWORD });
    expect(loggedIn.status).toBe(303);
    expect(b.cookie()).toMatch(/(^|; )bizcard_session=/);
    const consentPage = await b.go(loggedIn.headers.get("location")!);
    expect(consentPage.status).toBe(200);
    const consentHtml = await consentPage.text();
    expect(consentHtml).toContain("Strict Zap");
    const consentAction = formAction(consentHtml);
    const decided = await b.submit(consentAction, { ...hiddenFields(consentHtml), decision: "allow" });
    expect(decided.status).toBe(303);
    const callback = new URL(decided.headers.get("location")!);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT_URI);

    // The callback: state and iss checked by the library (RFC 9207).
    const params = oauth.validateAuthResponse(as, c, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      c,
      await oauth.authorizationCodeGrantRequest(as, c, clientAuth, params, REDIRECT_URI, verifier, insecure),
    );
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.access_token).toMatch(/^bca_/);
    expect(tokens.refresh_token).toMatch(/^bcr_/);
    expect(tokens.scope).toBe("organisation:read webhooks:read");
    expect(tokens.expires_in).toBeGreaterThan(3000);

    // The resource.
    const meUrl = new URL(`${issuer}/oauth/me`);
    const me = await oauth.protectedResourceRequest(tokens.access_token, "GET", meUrl, undefined, undefined, insecure);
    expect(me.status).toBe(200);
    expect(await me.json()).toEqual({ id: orgId, name: "Flow Cards" });
    // Again: answered from the cached check, its JSON written once; the same answer and headers.
    const again = await oauth.protectedResourceRequest(
      tokens.access_token,
      "GET",
      meUrl,
      undefined,
      undefined,
      insecure,
    );
    for (const answer of [me, again]) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(answer.headers.get("cache-control")).toBe("no-store");
    }
    expect(await again.text()).toBe(JSON.stringify({ id: orgId, name: "Flow Cards" }));

    // Refresh: a new pair; the new access token works.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      c,
      await oauth.refreshTokenGrantRequest(as, c, clientAuth, tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).toMatch(/^bcr_/);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(
      (await oauth.protectedResourceRequest(refreshed.access_token, "GET", meUrl, undefined, undefined, insecure))
        .status,
    ).toBe(200);

    // Introspection (RFC 7662), validated by the library.
    const introspected = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, clientAuth, refreshed.access_token, insecure),
    );
    expect(introspected).toMatchObject({ active: true, client_id: client.id, sub: orgId });

    // Revocation (RFC 7009) of the access token: it stops working, here and at once.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, c, clientAuth, refreshed.access_token, insecure),
    );
    // The library reads the refusal's challenge: Bearer, error="invalid_token".
    const refusal = await waitFor(
      () =>
        oauth.protectedResourceRequest(refreshed.access_token, "GET", meUrl, undefined, undefined, insecure).then(
          () => undefined,
          (err: unknown) => (err instanceof oauth.WWWAuthenticateChallengeError ? err : undefined),
        ),
      1000,
      "the revoked token to be refused",
    );
    expect(refusal.status).toBe(401);
    expect(refusal.cause[0]).toMatchObject({
      scheme: "bearer",
      parameters: { error: "invalid_token", realm: "bizcard" },
    });
    const after = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, clientAuth, refreshed.access_token, insecure),
    );
    expect(after.active).toBe(false);

    // And of the refresh token: it can no longer be used.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, c, clientAuth, refreshed.refresh_token!, insecure),
    );
    const reused = await oauth.refreshTokenGrantRequest(as, c, clientAuth, refreshed.refresh_token!, insecure);
    await expect(oauth.processRefreshTokenResponse(as, c, reused)).rejects.toMatchObject({ error: "invalid_grant" });
  });
});
