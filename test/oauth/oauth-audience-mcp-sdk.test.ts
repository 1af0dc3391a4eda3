// What an agent does (the MCP SDK's client/auth.js, the functions its auth()
// runs): discover the MCP endpoint's RFC 9728 document, the authorization
// server's RFC 8414 one, then send `resource` exactly as the document writes
// it on the authorization request, the code exchange and every refresh. The
// tokens are for the MCP endpoint (introspection's aud) and the REST API
// refuses them.
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  refreshAuthorization,
  startAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  REDIRECT_URI,
  consentAt,
  introspect,
  me,
  startAudienceSuite,
  type AudienceSuite,
} from "../support/audience-suite.js";

let suite: AudienceSuite;

beforeAll(async () => {
  suite = await startAudienceSuite("Agent Cards");
}, 60_000);

afterAll(async () => {
  await suite?.platform.stop();
});

describe("the MCP SDK's authorization functions", () => {
  it("resource on authorize, exchange and refresh: tokens for PUBLIC_URL/mcp", async () => {
    const resourceMetadata = await discoverOAuthProtectedResourceMetadata(new URL(suite.mcp));
    expect(resourceMetadata.resource).toBe(suite.mcp);
    const issuer = resourceMetadata.authorization_servers![0]!;
    const metadata = await discoverAuthorizationServerMetadata(issuer);
    expect(metadata?.issuer).toBe(suite.api);
    const clientInformation = { client_id: suite.web.id, client_secret: suite.web.secret };

    const { authorizationUrl, codeVerifier } = await startAuthorization(issuer, {
      metadata,
      clientInformation,
      redirectUrl: REDIRECT_URI,
      scope: "organisation:read",
      state: "agent-state",
      resource: new URL(resourceMetadata.resource),
    });
    expect(authorizationUrl.searchParams.get("resource")).toBe(suite.mcp);
    const { callback } = await consentAt(suite, authorizationUrl.href);
    const code = callback.searchParams.get("code");
    expect(code, callback.href).toMatch(/^bcc_/);

    const tokens = await exchangeAuthorization(issuer, {
      metadata,
      clientInformation,
      authorizationCode: code!,
      codeVerifier,
      redirectUri: REDIRECT_URI,
      resource: new URL(resourceMetadata.resource),
    });
    expect(await introspect(suite, tokens.access_token)).toMatchObject({ active: true, aud: suite.mcp });
    expect((await me(suite, tokens.access_token)).status).toBe(401);

    const refreshed = await refreshAuthorization(issuer, {
      metadata,
      clientInformation,
      refreshToken: tokens.refresh_token!,
      resource: new URL(resourceMetadata.resource),
    });
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(await introspect(suite, refreshed.access_token)).toMatchObject({ active: true, aud: suite.mcp });
  });
});
