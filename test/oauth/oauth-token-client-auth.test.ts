// Client authentication at POST /oauth/token (RFC 6749 §2.3), over real HTTP
// through the gateway in front of the real auth service: client_secret_post
// and client_secret_basic, never both at once; a wrong secret, an unknown
// client or a missing secret refused and counted; and a client over its
// failure limit.
import { describe, expect, it } from "vitest";
import {
  codeFor,
  confidential,
  expectOAuthError,
  expectTokens,
  failures,
  limitedClients,
  owned,
  post,
  REDIRECT,
  token,
  useOAuthTokenSuite,
} from "../support/oauth-token-suite.js";

useOAuthTokenSuite();

describe("authorization_code", () => {
  it("accepts client_secret_basic, and a JSON body; a confidential client may skip PKCE", async () => {
    const code = await codeFor(confidential, { scopes: ["organisation:read"] });
    const a = await token(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT },
      { basic: confidential, json: true },
    );
    expectTokens(a, { refresh: true, scope: "organisation:read" });
  });

  it("refuses both client authentication methods at once", async () => {
    const code = await codeFor(confidential);
    const a = await token(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_secret: confidential.secret },
      { basic: confidential },
    );
    expectOAuthError(a, 400, "invalid_request", /one client authentication method/);
  });

  it("refuses a wrong secret, an unknown client and a confidential client without its secret: 401 invalid_client, counted", async () => {
    const code = await codeFor(confidential);
    const before = failures.length;
    const wrong = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: confidential.id,
      client_secret: "bcs_wrong",
    });
    expectOAuthError(wrong, 401, "invalid_client");
    const basicWrong = await token(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT },
      { basic: { id: confidential.id, secret: "nope" } },
    );
    expectOAuthError(basicWrong, 401, "invalid_client");
    const unknown = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "bc_nobody",
      client_secret: "x",
    });
    expectOAuthError(unknown, 401, "invalid_client");
    const none = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: confidential.id,
    });
    expectOAuthError(none, 401, "invalid_client", /secret/);
    expect(failures.slice(before)).toEqual([
      `client:${confidential.id}`,
      `client:${confidential.id}`,
      "client:bc_nobody",
      `client:${confidential.id}`,
    ]);
    // The code was never looked at: it still works.
    expectTokens(
      await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }),
      { refresh: true },
    );
  });

  it("a client over its failure limit is 429 with Retry-After, whether its secret is right or wrong", async () => {
    const a = await token({ grant_type: "client_credentials", client_id: "bc_limited", client_secret: "x" });
    expect(a.status).toBe(429);
    expect(a.headers.get("retry-after")).toBe("7");
    expect(a.body.error).toBe("invalid_client");
    limitedClients.add(owned.id);
    try {
      const right = await token({ grant_type: "client_credentials", ...post(owned) });
      expect(right.status).toBe(429);
      expect(right.body.error).toBe("invalid_client");
      const wrong = await token({ grant_type: "client_credentials", client_id: owned.id, client_secret: "bcs_wrong" });
      expect(wrong.status).toBe(429);
    } finally {
      limitedClients.delete(owned.id);
    }
  });
});
