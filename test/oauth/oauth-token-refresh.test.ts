// POST /oauth/token for refresh_token (rotation, the retry window, reuse
// detection) and client_credentials, and a strict client library
// (oauth4webapi) reading the answers.
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { openAnswer, sealAnswer } from "../../services/auth/grants/retry-answer.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { waitFor } from "../support/processes.js";
import {
  ALL,
  auth,
  bearer,
  codeFor,
  confidential,
  exchangeCode,
  expectOAuthError,
  expectTokens,
  grantEvents,
  grantOf,
  memberB,
  orgA,
  orgB,
  other,
  owned,
  post,
  PUBLIC_REDIRECT,
  publicClient,
  REDIRECT,
  rpc,
  token,
  url,
  useOAuthTokenSuite,
} from "../support/oauth-token-suite.js";

useOAuthTokenSuite();

describe("refresh_token", () => {
  it("rotates, and a requested scope may only narrow", async () => {
    const first = await exchangeCode(confidential, { scopes: ["organisation:read", "webhooks:read"] });
    const narrowed = await token({
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      scope: "webhooks:read",
      ...post(confidential),
    });
    expectTokens(narrowed, { refresh: true, scope: "webhooks:read" });
    expect(narrowed.body.refresh_token).not.toBe(first.refresh_token);
    const next = narrowed.body.refresh_token as string;
    // Widening beyond what was granted: refused, and the token is not spent.
    const wider = await token({
      grant_type: "refresh_token",
      refresh_token: next,
      scope: "webhooks:read contacts:read",
      ...post(confidential),
    });
    expectOAuthError(wider, 400, "invalid_scope", /contacts:read/);
    // Without scope: everything originally granted again.
    const again = await token(
      { grant_type: "refresh_token", refresh_token: next, ...post(confidential) },
      { basic: undefined },
    );
    expectTokens(again, { refresh: true, scope: "organisation:read webhooks:read" });
  });

  it("a rotated token presented again within the window returns the same pair", async () => {
    const first = await exchangeCode(confidential);
    const params = { grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(confidential) };
    const a = await token(params);
    expectTokens(a, { refresh: true });
    const b = await token(params);
    expectTokens(b, { refresh: true });
    expect(b.body.access_token).toBe(a.body.access_token);
    expect(b.body.refresh_token).toBe(a.body.refresh_token);
    expect(Number(b.body.expires_in)).toBeLessThanOrEqual(3600);
    // The new pair works; another client presenting the old token gets nothing.
    expect(await bearer(a.body.access_token as string)).toBe(orgA);
    expectOAuthError(await token({ ...params, ...post(other) }), 400, "invalid_grant");
    expectTokens(
      await token({
        grant_type: "refresh_token",
        refresh_token: a.body.refresh_token as string,
        ...post(confidential),
      }),
      { refresh: true },
    );
    // Only the hash and the sealed answer are stored: nothing in the row reads as the new tokens.
    const [row]: { retry_answer: Buffer }[] = await auth.app.orm.em
      .fork()
      .execute(`select "retry_answer" from "auth"."refresh_token" where "hash" = ?`, [tokenHash(first.refresh_token)]);
    expect(row.retry_answer.toString("latin1")).not.toContain(a.body.access_token as string);
  });

  it("two concurrent refreshes with one token both get the same new pair", async () => {
    const first = await exchangeCode(confidential);
    const params = { grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(confidential) };
    const [a, b] = await Promise.all([token(params), token(params)]);
    expectTokens(a, { refresh: true });
    expectTokens(b, { refresh: true });
    expect(b.body.refresh_token).toBe(a.body.refresh_token);
    expect(b.body.access_token).toBe(a.body.access_token);
  });

  it("the kept answer opens only with the refresh token it was sealed under", () => {
    const issued = { accessToken: "bca_a", refreshToken: "bcr_b", expiresAt: 1, scopes: ["organisation:read"] };
    const sealed = sealAnswer("bcr_presented", issued);
    expect(openAnswer("bcr_presented", sealed)).toEqual(issued);
    expect(openAnswer("bcr_other", sealed)).toBeUndefined();
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(openAnswer("bcr_presented", tampered)).toBeUndefined();
  });

  it("a rotated token presented after the window revokes the grant (reuse detection)", async () => {
    const first = await exchangeCode(other, { organisationId: orgB, memberId: memberB });
    const rotated = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(other) });
    expectTokens(rotated, { refresh: true });
    await auth.app.orm.em
      .fork()
      .execute(`update "auth"."refresh_token" set "rotated_at" = now() - interval '1 hour' where "hash" = ?`, [
        tokenHash(first.refresh_token),
      ]);
    const reuse = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(other) });
    expectOAuthError(reuse, 400, "invalid_grant", /already used/);
    expect(await bearer(rotated.body.access_token as string)).toBe("invalid_token");
    expectOAuthError(
      await token({ grant_type: "refresh_token", refresh_token: rotated.body.refresh_token as string, ...post(other) }),
      400,
      "invalid_grant",
    );
    expect(await grantOf(orgB, other.id)).toBeUndefined();
    await waitFor(
      () => grantEvents.find((e) => e.organisationId === orgB && e.reason === "refresh_token_reuse"),
      10_000,
      "grant.revoked",
    );
  });
});

describe("client_credentials", () => {
  it("acts for the owning organisation, with no refresh token and at most the client's scopes", async () => {
    const a = await token({ grant_type: "client_credentials", ...post(owned) });
    expectTokens(a, { refresh: false, scope: "organisation:read contacts:read" });
    const who = await rpc().authenticateAccessToken({ accessToken: a.body.access_token as string });
    expect(who).toMatchObject({ organisationId: orgA, clientId: owned.id, memberId: "" });
    expect(who.organisationId).not.toBe(orgB);
    const narrowed = await token({ grant_type: "client_credentials", scope: "contacts:read" }, { basic: owned });
    expectTokens(narrowed, { refresh: false, scope: "contacts:read" });
    expectOAuthError(
      await token({ grant_type: "client_credentials", scope: "webhooks:write", ...post(owned) }),
      400,
      "invalid_scope",
    );
  });
});

describe("a strict client library (oauth4webapi) accepts the answers", () => {
  const insecure = { [oauth.allowInsecureRequests]: true };
  const as = () => ({
    issuer: "http://localhost:8080",
    token_endpoint: `${url}/oauth/token`,
    authorization_response_iss_parameter_supported: true,
  });

  it("authorization_code with PKCE and client_secret_basic, then refresh with client_secret_post", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const challenge = await oauth.calculatePKCECodeChallenge(verifier);
    const code = await codeFor(confidential, { challenge });
    const client = { client_id: confidential.id };
    const callback = oauth.validateAuthResponse(
      as(),
      client,
      new URL(`${REDIRECT}?code=${code}&state=s1&iss=${encodeURIComponent(as().issuer)}`),
      "s1",
    );
    const response = await oauth.authorizationCodeGrantRequest(
      as(),
      client,
      oauth.ClientSecretBasic(confidential.secret),
      callback,
      REDIRECT,
      verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as(), client, response);
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 3600, scope: ALL });
    expect(tokens.refresh_token).toMatch(/^bcr_/);
    const refreshed = await oauth.processRefreshTokenResponse(
      as(),
      client,
      await oauth.refreshTokenGrantRequest(
        as(),
        client,
        oauth.ClientSecretPost(confidential.secret),
        tokens.refresh_token!,
        insecure,
      ),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it("a public client with PKCE (None), and client_credentials", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await codeFor(publicClient, {
      challenge: await oauth.calculatePKCECodeChallenge(verifier),
      redirectUri: PUBLIC_REDIRECT,
    });
    const client = { client_id: publicClient.id };
    const callback = oauth.validateAuthResponse(
      as(),
      client,
      new URL(`${PUBLIC_REDIRECT}?code=${code}&iss=${encodeURIComponent(as().issuer)}`),
      oauth.expectNoState,
    );
    const res = await oauth.authorizationCodeGrantRequest(
      as(),
      client,
      oauth.None(),
      callback,
      PUBLIC_REDIRECT,
      verifier,
      insecure,
    );
    expect((await oauth.processAuthorizationCodeResponse(as(), client, res)).access_token).toMatch(/^bca_/);

    const cc = await oauth.processClientCredentialsResponse(
      as(),
      { client_id: owned.id },
      await oauth.clientCredentialsGrantRequest(
        as(),
        { client_id: owned.id },
        oauth.ClientSecretBasic(owned.secret),
        { scope: "contacts:read" },
        insecure,
      ),
    );
    expect(cc).toMatchObject({ token_type: "bearer", scope: "contacts:read" });
    expect(cc.refresh_token).toBeUndefined();
  });

  it("errors reach the library as RFC 6749 errors", async () => {
    const client = { client_id: confidential.id };
    const res = await oauth.refreshTokenGrantRequest(
      as(),
      client,
      oauth.ClientSecretPost(confidential.secret),
      "bcr_unknown",
      insecure,
    );
    await expect(oauth.processRefreshTokenResponse(as(), client, res)).rejects.toMatchObject({
      error: "invalid_grant",
      status: 400,
    });
  });
});
