// The authorization request's validation over RPC (RFC 6749 §4.1.1 /
// §4.1.2.1, RFC 7636, RFC 9700, RFC 9207): what is refused on a page, what
// goes back to the client's redirect_uri, and the interactions it starts.
// Login and its limits: oauth-interactions-login.test.ts; consent and the
// connected applications: oauth-interactions-consent.test.ts.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { InteractionKind } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { rpcError } from "../support/rpc.js";
import {
  CHALLENGE,
  clients,
  ISSUER,
  login,
  params,
  redirected,
  refusedOnPage,
  rpc,
  useInteractionsSuite,
} from "../support/interactions-suite.js";

useInteractionsSuite();

describe("StartAuthorization: never a redirect to an unknown client or an unregistered redirect_uri", () => {
  it("unknown or missing client_id, and redirect_uris that are not an exact registered string", async () => {
    await refusedOnPage({ clientId: "bc_nope" }, /unknown client_id/);
    await refusedOnPage({ clientId: "" }, /client_id is required/);
    for (const redirectUri of [
      "https://app.example/cb",
      "https://app.example/cb?tenant=1&x=2",
      "https://APP.example/cb?tenant=1",
      "https://app.example/cb?tenant=1/../evil",
      "https://evil.example/cb?tenant=1",
    ]) {
      await refusedOnPage({ redirectUri }, /redirect_uri is not one the client registered/);
    }
    // Two registered: the request must name one.
    await refusedOnPage({ clientId: clients.two, redirectUri: "" }, /redirect_uri is required/);
    // client_id or redirect_uri twice: no telling where an error may go.
    await refusedOnPage({}, /redirect_uri was given more than once/, ["redirect_uri"]);
    await refusedOnPage({}, /client_id was given more than once/, ["client_id"]);
  });
});

describe("StartAuthorization: errors back to the client's redirect_uri with error, state and iss", () => {
  const expectError = (url: URL, error: string, base = "https://app.example/cb") => {
    expect(`${url.origin}${url.pathname}`).toBe(base);
    expect(url.searchParams.get("error")).toBe(error);
    expect(url.searchParams.get("error_description")).toBeTruthy();
    expect(url.searchParams.get("iss")).toBe(ISSUER);
  };

  it("response_type other than code is unsupported_response_type; missing is invalid_request; the registered query is kept", async () => {
    const url = await redirected({ responseType: "token" });
    expectError(url, "unsupported_response_type");
    expect(url.searchParams.get("state")).toBe("xyz");
    expect(url.searchParams.get("tenant")).toBe("1");
    expectError(await redirected({ responseType: "" }), "invalid_request");
    expectError(await redirected({ responseType: "code id_token" }), "unsupported_response_type");
  });

  it("no state in the request, no state in the answer", async () => {
    const url = await redirected({ responseType: "token", state: "" });
    expect(url.searchParams.has("state")).toBe(false);
    expect(url.searchParams.get("iss")).toBe(ISSUER);
  });

  it("a parameter given twice is invalid_request (RFC 6749 §3.1)", async () => {
    const url = await redirected({}, ["scope"]);
    expectError(url, "invalid_request");
    expect(url.searchParams.get("error_description")).toMatch(/scope given more than once/);
  });

  it("PKCE: plain, a missing method and a malformed challenge are refused; S256 only", async () => {
    expectError(await redirected({ codeChallenge: CHALLENGE, codeChallengeMethod: "plain" }), "invalid_request");
    // RFC 7636 §4.3: the method defaults to plain.
    expectError(await redirected({ codeChallenge: CHALLENGE, codeChallengeMethod: "" }), "invalid_request");
    expectError(await redirected({ codeChallenge: "short", codeChallengeMethod: "S256" }), "invalid_request");
    expectError(
      await redirected({ codeChallenge: `${CHALLENGE.slice(0, 42)}!`, codeChallengeMethod: "S256" }),
      "invalid_request",
    );
    expectError(await redirected({ codeChallengeMethod: "S256" }), "invalid_request");
    const ok = await rpc().startAuthorization({
      parameters: params({ codeChallenge: CHALLENGE, codeChallengeMethod: "S256" }),
    });
    expect(ok.interactionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("a public client without PKCE is refused", async () => {
    const p = { clientId: clients.pub, redirectUri: "http://127.0.0.1:8765/cb" };
    const url = await redirected(p);
    expectError(url, "invalid_request", "http://127.0.0.1:8765/cb");
    expect(url.searchParams.get("error_description")).toMatch(/code_challenge is required/);
    const ok = await rpc().startAuthorization({
      parameters: params({ ...p, codeChallenge: CHALLENGE, codeChallengeMethod: "S256" }),
    });
    expect(ok.interactionId).not.toBe("");
  });

  it("scopes beyond the client's, or unknown, are invalid_scope; none means the client's", async () => {
    const narrow = { clientId: clients.narrow, redirectUri: "https://narrow.example/cb" };
    expectError(
      await redirected({ ...narrow, scope: "organisation:read contacts:read" }),
      "invalid_scope",
      "https://narrow.example/cb",
    );
    expectError(await redirected({ scope: "admin" }), "invalid_scope");
    const { interactionId } = await rpc().startAuthorization({ parameters: params({ ...narrow, scope: "" }) });
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction?.scopes).toEqual(["organisation:read"]);
  });

  it("response_mode other than query is invalid_request", async () => {
    expectError(await redirected({ responseMode: "fragment" }), "invalid_request");
  });
});

describe("interactions", () => {
  it("a valid request becomes an interaction: client, scopes in the server's order, parameters, CSRF token, expiry", async () => {
    const { interactionId, redirectTo } = await rpc().startAuthorization({
      parameters: params({
        scope: "contacts:read organisation:read",
        codeChallenge: CHALLENGE,
        codeChallengeMethod: "S256",
      }),
    });
    expect(redirectTo).toBe("");
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction).toMatchObject({
      id: interactionId,
      kind: InteractionKind.AUTHORIZE,
      loggedIn: false,
      scopes: ["organisation:read", "contacts:read"],
      client: { clientId: clients.web, name: "Web app" },
      parameters: {
        clientId: clients.web,
        redirectUri: "https://app.example/cb?tenant=1",
        state: "xyz",
        responseType: "code",
        codeChallenge: CHALLENGE,
        codeChallengeMethod: "S256",
      },
    });
    expect(interaction?.client?.redirectUris).toEqual(["https://app.example/cb?tenant=1"]);
    expect(Math.abs(Number(interaction!.client!.createTime!.seconds) * 1000 - Date.now())).toBeLessThan(120_000);
    expect(interaction?.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const ttl = Number(interaction!.expireTime!.seconds) * 1000 - Date.now();
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    expect((await rpcError(rpc().getInteraction({ interactionId: "nope" }))).code).toBe(Code.NotFound);
  });

  it("a single registered redirect_uri is the default", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({ redirectUri: "" }) });
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction?.parameters?.redirectUri).toBe("https://app.example/cb?tenant=1");
  });

  it("an account login is an interaction of kind ACCOUNT", async () => {
    const { interactionId } = await rpc().startAccountLogin({});
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction).toMatchObject({ kind: InteractionKind.ACCOUNT, loggedIn: false, scopes: [] });
    const res = await login(interactionId);
    expect(res.interaction).toMatchObject({
      kind: InteractionKind.ACCOUNT,
      loggedIn: true,
      memberEmail: "ada@acme.test",
    });
  });
});
