// POST /oauth/token for authorization_code, over real HTTP through the
// gateway in front of the real auth service: PKCE, replay, redirect_uri, and
// which grant types a client may register and use (RFC 6749 §4.1; RFC 7636).
// Client authentication: oauth-token-client-auth.test.ts; refresh,
// client_credentials and a strict client library: oauth-token-refresh.test.ts;
// introspection, revocation and grants: oauth-token-revocation.test.ts.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";
import {
  ALL,
  auth,
  bearer,
  codeFor,
  confidential,
  expectOAuthError,
  expectTokens,
  grantEvents,
  grantOf,
  memberA,
  orgA,
  other,
  owned,
  pkce,
  post,
  PUBLIC_REDIRECT,
  publicClient,
  REDIRECT,
  rpc,
  token,
  useOAuthTokenSuite,
} from "../support/oauth-token-suite.js";

useOAuthTokenSuite();

describe("client registration: grant types", () => {
  it("defaults to authorization_code and refresh_token, plus client_credentials for an owned client", async () => {
    const a = await rpc().getClient({ clientId: confidential.id });
    expect(a.client?.grantTypes).toEqual(["authorization_code", "refresh_token"]);
    const b = await rpc().getClient({ clientId: owned.id });
    expect(b.client?.grantTypes).toEqual(["client_credentials"]);
    const c = await rpc().createClient({ name: "Both", redirectUris: [REDIRECT], ownerOrganisationId: orgA });
    expect(c.client?.grantTypes).toEqual(["authorization_code", "refresh_token", "client_credentials"]);
  });

  it("refuses unknown grant types and client_credentials for clients no organisation owns", async () => {
    const unknown = await rpcError(
      rpc().createClient({ name: "X", redirectUris: [REDIRECT], grantTypes: ["password"] }),
    );
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.rawMessage).toMatch(/grant_types.*password/);
    const cc = await rpcError(
      rpc().createClient({ name: "X", redirectUris: [REDIRECT], grantTypes: ["client_credentials"] }),
    );
    expect(cc.rawMessage).toMatch(/client_credentials/);
    const pub = await rpcError(
      rpc().createClient({
        name: "X",
        redirectUris: [PUBLIC_REDIRECT],
        public: true,
        grantTypes: ["client_credentials"],
      }),
    );
    expect(pub.code).toBe(Code.InvalidArgument);
    const chosen = await rpc().createClient({
      name: "X",
      redirectUris: [REDIRECT],
      grantTypes: ["authorization_code"],
    });
    expect(chosen.client?.grantTypes).toEqual(["authorization_code"]);
  });
});

describe("authorization_code", () => {
  it("exchanges a code with PKCE for an access and a refresh token (client_secret_post, form)", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(confidential, { challenge });
    expect(code).toMatch(/^bcc_[A-Za-z0-9_-]{43}$/);
    const a = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      ...post(confidential),
    });
    expectTokens(a, { refresh: true });
    const who = await rpc().authenticateAccessToken({ accessToken: a.body.access_token as string });
    expect(who).toMatchObject({
      organisationId: orgA,
      clientId: confidential.id,
      memberId: memberA,
      scopes: ALL.split(" "),
    });
  });

  it("a replayed code fails with invalid_grant and revokes the grant and the tokens it issued", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(other, { challenge });
    const params = {
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      ...post(other),
    };
    const first = await token(params);
    expectTokens(first, { refresh: true });
    expect(await bearer(first.body.access_token as string)).toBe(orgA);
    const again = await token(params);
    expectOAuthError(again, 400, "invalid_grant", /already used/);
    expect(await bearer(first.body.access_token as string)).toBe("invalid_token");
    const refresh = await token({
      grant_type: "refresh_token",
      refresh_token: first.body.refresh_token as string,
      ...post(other),
    });
    expectOAuthError(refresh, 400, "invalid_grant");
    expect(await grantOf(orgA, other.id)).toBeUndefined();
    await waitFor(
      () => grantEvents.find((e) => e.clientId === other.id && e.reason === "authorization_code_replay"),
      10_000,
      "grant.revoked",
    );
    // Gone with the grant: a third try is an unknown code.
    expectOAuthError(await token(params), 400, "invalid_grant", /unknown/);
  });

  it("of two concurrent exchanges of one code, exactly one succeeds", async () => {
    const res = await rpc().createClient({ name: "Racer", redirectUris: [REDIRECT] });
    const racer = { id: res.client!.clientId, secret: res.clientSecret };
    const code = await codeFor(racer);
    const params = { grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(racer) };
    const answers = await Promise.all([token(params), token(params)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 400)?.body.error).toBe("invalid_grant");
  });

  it("refuses a code presented by another client, without revoking anything", async () => {
    const code = await codeFor(confidential);
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(other) });
    expectOAuthError(a, 400, "invalid_grant", /another client/);
    expectTokens(
      await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }),
      { refresh: true },
    );
  });

  it("refuses a redirect_uri that differs from the authorization request's (and the code stays usable)", async () => {
    const code = await codeFor(confidential);
    for (const redirect of [`${REDIRECT}/`, "https://evil.example.test/callback", ""]) {
      const params: Record<string, string> = { grant_type: "authorization_code", code, ...post(confidential) };
      if (redirect) params.redirect_uri = redirect;
      expectOAuthError(await token(params), 400, "invalid_grant", /redirect_uri/);
    }
    expectTokens(
      await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }),
      { refresh: true },
    );
  });

  it("checks PKCE: a missing, wrong or malformed verifier, or a verifier for a code without challenge, is invalid_grant", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(confidential, { challenge });
    const send = (extra: Record<string, string>) =>
      token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential), ...extra });
    expectOAuthError(await send({}), 400, "invalid_grant", /code_verifier is required/);
    expectOAuthError(await send({ code_verifier: pkce().verifier }), 400, "invalid_grant", /does not match/);
    // The plain method: the challenge itself sent as verifier.
    expectOAuthError(await send({ code_verifier: challenge }), 400, "invalid_grant", /does not match/);
    expectOAuthError(await send({ code_verifier: "short" }), 400, "invalid_grant", /43 to 128/);
    expectTokens(await send({ code_verifier: verifier }), { refresh: true });

    const plainCode = await codeFor(confidential);
    const downgrade = await token({
      grant_type: "authorization_code",
      code: plainCode,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      ...post(confidential),
    });
    expectOAuthError(downgrade, 400, "invalid_grant", /no code_challenge/);
  });

  it("a public client sends only client_id and must have used PKCE", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(publicClient, { challenge, redirectUri: PUBLIC_REDIRECT });
    const a = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: PUBLIC_REDIRECT,
      code_verifier: verifier,
      client_id: publicClient.id,
    });
    expectTokens(a, { refresh: true });
    const noPkce = await codeFor(publicClient, { redirectUri: PUBLIC_REDIRECT });
    const b = await token({
      grant_type: "authorization_code",
      code: noPkce,
      redirect_uri: PUBLIC_REDIRECT,
      client_id: publicClient.id,
    });
    expectOAuthError(b, 400, "invalid_grant", /public client must use PKCE/);
    const withSecret = await token({
      grant_type: "authorization_code",
      code: noPkce,
      redirect_uri: PUBLIC_REDIRECT,
      client_id: publicClient.id,
      client_secret: "guess",
    });
    expectOAuthError(withSecret, 401, "invalid_client");
  });

  it("refuses an expired code", async () => {
    const code = await codeFor(confidential);
    await auth.app.orm.em
      .fork()
      .execute(`update "auth"."authorization_code" set "expires_at" = now() - interval '1 second' where "hash" = ?`, [
        tokenHash(code),
      ]);
    expectOAuthError(
      await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }),
      400,
      "invalid_grant",
      /expired/,
    );
  });

  it("names missing parameters (invalid_request) and unknown grant types (unsupported_grant_type)", async () => {
    expectOAuthError(
      await token({ grant_type: "authorization_code", redirect_uri: REDIRECT, ...post(confidential) }),
      400,
      "invalid_request",
      /code/,
    );
    expectOAuthError(
      await token({ grant_type: "refresh_token", ...post(confidential) }),
      400,
      "invalid_request",
      /refresh_token/,
    );
    expectOAuthError(
      await token({ grant_type: "password", username: "a", password: "b", ...post(confidential) }),
      400,
      "unsupported_grant_type",
    );
    // Straight over RPC too: the auth service does not rely on the gateway's checks.
    const err = await rpcError(
      rpc().exchangeToken({
        grantType: "password",
        client: { clientId: confidential.id, clientSecret: confidential.secret, method: "client_secret_post" },
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(OAuthErrorSchema)[0]?.error).toBe("unsupported_grant_type");
  });

  it("refuses a grant type the client may not use: unauthorized_client", async () => {
    expectOAuthError(
      await token({ grant_type: "client_credentials", ...post(confidential) }),
      400,
      "unauthorized_client",
    );
    expectOAuthError(
      await token({ grant_type: "authorization_code", code: "bcc_x", redirect_uri: REDIRECT, ...post(owned) }),
      400,
      "unauthorized_client",
    );
  });
});
