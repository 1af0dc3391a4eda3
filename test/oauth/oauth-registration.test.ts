// Dynamic client registration (RFC 7591) at POST /oauth/register, as an
// agent uses it: turned on, advertised, its answer (RFC 7591 §3.2.1) parsed
// by the MCP SDK, the registered client carried through the authorization
// code flow. Turned off: 404 and not advertised. What it refuses, and the
// limit per address: oauth-registration-rules.test.ts.
import { Code, ConnectError } from "@connectrpc/connect";
import { discoverAuthorizationServerMetadata, registerClient } from "@modelcontextprotocol/sdk/client/auth.js";
import { describe, expect, it } from "vitest";
import { AuthService, ClientRegistration } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { expectError } from "../support/api-client.js";
import { authorizationCode, pkce } from "../support/browser-authorization.js";
import { createAuthApp } from "../support/platform.js";
import {
  base,
  clientCount,
  freshAddress,
  LOOPBACK_REDIRECT,
  MEMBER,
  platform,
  register,
  registered,
  token,
  useRegistrationSuite,
} from "../support/registration-suite.js";

useRegistrationSuite();

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
      fetchFn: (url, init) =>
        fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), "x-forwarded-for": address } }),
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
    const res = await register({
      redirect_uris: ["https://app.example/cb"],
      client_uri: "https://app.example/",
      logo_uri: "https://app.example/l.png",
      contacts: ["a@app.example"],
    });
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
    const query = {
      client_id: clientId,
      redirect_uri: LOOPBACK_REDIRECT,
      scope: "organisation:read",
      code_challenge: challenge,
      code_challenge_method: "S256",
    };
    const code = await authorizationCode(base, query, MEMBER);
    const exchanged = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: LOOPBACK_REDIRECT,
      code_verifier: verifier,
      client_id: clientId,
    });
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    expect(exchanged.body.scope).toBe("organisation:read");
    const me = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${exchanged.body.access_token}` } });
    expect(me.status).toBe(200);
    const refreshed = await token({
      grant_type: "refresh_token",
      refresh_token: exchanged.body.refresh_token as string,
      client_id: clientId,
    });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
  });

  it("a native public client registered with a portless loopback URI may redirect to any port of it (RFC 8252 §7.3)", async () => {
    const client = await registered({
      redirect_uris: ["http://127.0.0.1/callback"],
      token_endpoint_auth_method: "none",
    });
    const { challenge } = pkce();
    const code = await authorizationCode(
      base,
      {
        client_id: client.client_id as string,
        redirect_uri: "http://127.0.0.1:51515/callback",
        code_challenge: challenge,
        code_challenge_method: "S256",
      },
      MEMBER,
    );
    expect(code).toMatch(/^bcc_/);
  });

  it("a member sent as null counts as left out", async () => {
    const client = await registered({
      redirect_uris: ["https://null.example/cb"],
      client_uri: null,
      client_name: null,
      grant_types: null,
      application_type: null,
    });
    expect(client).not.toHaveProperty("client_uri");
    expect(client.client_name).toBe("null.example");
    expect(client.grant_types).toEqual(["authorization_code"]);
    expect(client.application_type).toBe("web");
  });

  it("a public client without PKCE is refused at the authorization endpoint", async () => {
    const client = await registered({ redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: "none" });
    const res = await fetch(
      `${base}/oauth/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id as string, redirect_uri: LOOPBACK_REDIRECT, state: "s" })}`,
      {
        redirect: "manual",
      },
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(LOOPBACK_REDIRECT);
    expect(location.searchParams.get("error")).toBe("invalid_request");
  });

  it("a confidential client (client_secret_post) exchanges its code with the secret in the body; a wrong secret is invalid_client", async () => {
    const client = await registered({
      client_name: "Web App",
      redirect_uris: ["https://web.example/cb"],
      token_endpoint_auth_method: "client_secret_post",
    });
    expect(client.token_endpoint_auth_method).toBe("client_secret_post");
    const clientId = client.client_id as string;
    const { verifier, challenge } = pkce();
    const code = await authorizationCode(
      base,
      {
        client_id: clientId,
        redirect_uri: "https://web.example/cb",
        scope: "organisation:read",
        code_challenge: challenge,
        code_challenge_method: "S256",
      },
      MEMBER,
    );
    const wrong = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: "https://web.example/cb",
      code_verifier: verifier,
      client_id: clientId,
      client_secret: "bcs_wrong",
    });
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
    const credentials = Buffer.from(
      `${encodeURIComponent(client.client_id as string)}:${encodeURIComponent(client.client_secret as string)}`,
    ).toString("base64");
    const res = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${credentials}` },
      body: new URLSearchParams({ grant_type: "client_credentials" }).toString(),
    });
    await expectError(res, 400, "unauthorized_client");
  });
});

describe("registration turned off", () => {
  it("POST /oauth/register is 404 and the metadata has no registration_endpoint", async () => {
    const gateway = await platform.addGateway({ config: { OAUTH_DYNAMIC_REGISTRATION: "false" } });
    try {
      const res = await fetch(`${gateway.base}/oauth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ redirect_uris: ["https://a.example/cb"] }),
      });
      await expectError(res, 404, "not_found", "dynamic client registration is not enabled on this server");
      const metadata = (await (await fetch(`${gateway.base}/.well-known/oauth-authorization-server`)).json()) as Record<
        string,
        unknown
      >;
      expect(metadata).not.toHaveProperty("registration_endpoint");
      expect(metadata.issuer).toBeTypeOf("string");
    } finally {
      await gateway.close();
    }
  });

  it("an auth service whose configuration says off refuses RegisterClient with NOT_FOUND", async () => {
    const off = await platform.startService(
      createAuthApp,
      platform.configWith({ OAUTH_DYNAMIC_REGISTRATION: "false" }),
    );
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
