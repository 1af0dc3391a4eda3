// The gateway's resource side as a client sees it, over real HTTP, in front of
// the real auth and organisation services: RFC 6750 bearer checks on
// GET /oauth/me, the RFC 8414 metadata document, an expired token, and failure
// limits that hold across two gateways. Revocation and introspection:
// oauth-resource-revocation.test.ts.
import * as oauth from "oauth4webapi";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import {
  a,
  accessToken,
  app,
  auth,
  b,
  basic,
  db,
  me,
  narrow,
  orgId,
  orgName,
  organisation,
  post,
  useResourceSuite,
} from "../support/resource-suite.js";

const { Client } = pg;

useResourceSuite();

describe("GET /.well-known/oauth-authorization-server (RFC 8414)", () => {
  it("lists exactly what is supported, under the gateway's issuer", async () => {
    const res = await fetch(`${a}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      issuer: a,
      authorization_endpoint: `${a}/oauth/authorize`,
      token_endpoint: `${a}/oauth/token`,
      revocation_endpoint: `${a}/oauth/revoke`,
      introspection_endpoint: `${a}/oauth/introspect`,
      scopes_supported: ["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
      token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
  });

  it("validates in a strict client (oauth4webapi), from either process of the deployment", async () => {
    const issuer = new URL(a);
    const response = await oauth.discoveryRequest(new URL(b), {
      algorithm: "oauth2",
      [oauth.allowInsecureRequests]: true,
    });
    const as = await oauth.processDiscoveryResponse(issuer, response);
    expect(as.issuer).toBe(a);
    expect(as.token_endpoint).toBe(`${a}/oauth/token`);
  });
});

describe("bearer checks on GET /oauth/me (RFC 6750)", () => {
  it("answers the organisation's id and name for a token with organisation:read, on either gateway", async () => {
    const token = await accessToken(app);
    for (const base of [a, b, a]) {
      const res = await me(base, token);
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(await res.json()).toEqual({ id: orgId, name: orgName });
    }
  });

  it("no token: 401 with a bare Bearer challenge (no error attribute)", async () => {
    for (const headers of [{}, { authorization: basic(app.id, app.secret) }] as Record<string, string>[]) {
      const res = await fetch(`${a}/oauth/me`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer realm="bizcard", resource_metadata="${a}/.well-known/oauth-protected-resource"`,
      );
      expect(await res.json()).toEqual({ error: "invalid_token", error_description: expect.any(String) });
    }
  });

  it("a token in the query string is refused (400 invalid_request), even with a valid header", async () => {
    const token = await accessToken(app);
    for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
      const res = await fetch(`${a}/oauth/me?access_token=${token}`, { headers });
      expect(res.status).toBe(400);
      expect(res.headers.get("www-authenticate")).toMatch(
        /^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_request", error_description="[^"]+"$/,
      );
      expect(await res.json()).toEqual({
        error: "invalid_request",
        error_description: expect.stringMatching(/Authorization header/),
      });
    }
  });

  it("an unknown, malformed or refresh-less garbage token: 401 invalid_token with a description", async () => {
    for (const token of [
      "bca_doesnotexist0000000000000000000000000000000",
      "not a token",
      "a,b",
      `${"x".repeat(600)}`,
    ]) {
      const res = await fetch(`${a}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, token).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(
        /^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_token", error_description="[^"]+"$/,
      );
      expect(await res.json()).toEqual({ error: "invalid_token", error_description: expect.any(String) });
    }
  });

  it("the scheme is case-insensitive", async () => {
    const token = await accessToken(app);
    const res = await fetch(`${a}/oauth/me`, { headers: { authorization: `bearer ${token}` } });
    expect(res.status).toBe(200);
  });

  it("a token without organisation:read: 403 insufficient_scope naming the scope needed", async () => {
    const token = await accessToken(narrow);
    const res = await me(a, token);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer realm="bizcard", resource_metadata="${a}/.well-known/oauth-protected-resource", error="insufficient_scope", error_description="this resource needs the scope organisation:read", scope="organisation:read"`,
    );
    expect(await res.json()).toEqual({
      error: "insufficient_scope",
      error_description: "this resource needs the scope organisation:read",
    });
  });

  it("a token narrowed to other scopes at the token endpoint is refused the same way", async () => {
    const token = await accessToken(app, "webhooks:read");
    expect((await me(a, token)).status).toBe(403);
  });
});

describe("an expired access token (RFC 6750 §3.1)", () => {
  it("is 401 invalid_token with WWW-Authenticate", async () => {
    const token = await accessToken(app, "organisation:read");
    // Expired as if its hour had passed: the auth service compares with now().
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const updated = await pg.query(
        `update "auth"."access_token" set "expires_at" = now() - interval '1 second' where "hash" = $1`,
        [tokenHash(token)],
      );
      expect(updated.rowCount).toBe(1);
    } finally {
      await pg.end();
    }
    const res = await me(b, token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_token"/,
    );
    expect(((await res.json()) as { error: string }).error).toBe("invalid_token");
  });
});

describe("failure limits hold across gateway processes", () => {
  it("failed client authentications spread over two gateways: past the limit, the next is 429 with Retry-After", async () => {
    const clients = auth.client(AuthService);
    const target = await clients.createClient({ name: "Target", ownerOrganisationId: orgId });
    const id = target.client!.clientId;
    // RATE_LIMIT_CLIENT_AUTH_FAILURES: 10 a minute for one client from one address.
    for (let i = 0; i < 10; i++) {
      const res = await post(`${i % 2 ? a : b}/oauth/token`, {
        grant_type: "client_credentials",
        client_id: id,
        client_secret: `wrong-${i}`,
      });
      expect(res.status, `attempt ${i + 1}`).toBe(401);
    }
    for (const base of [a, b]) {
      const res = await post(`${base}/oauth/token`, {
        grant_type: "client_credentials",
        client_id: id,
        client_secret: target.clientSecret,
      });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
    }
  });

  it("failed logins spread over two gateways: past the limit, the next is a 429 page with Retry-After", async () => {
    await organisation
      .client(OrganisationService)
      .createMember({ organisationId: orgId, email: "limits@resource.test", password: "right password!" });
    const started = await fetch(`${a}/account/login`, { redirect: "manual" });
    expect(started.status).toBe(303);
    const interaction = new URL(started.headers.get("location")!, a).pathname;
    const shown = await fetch(`${b}${interaction}`);
    const page = await shown.text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)?.[1];
    const form = /name="form_token" value="([^"]+)"/.exec(page)?.[1];
    expect(csrf).toBeTruthy();
    // One browser: the form cookie gateway b set is its own on gateway a too (one host).
    const cookie = shown.headers.getSetCookie()[0]!.split(";")[0]!;
    const login = (base: string, password: string) =>
      post(
        `${base}${interaction}/login`,
        { csrf_token: csrf!, form_token: form!, email: "limits@resource.test", password },
        { cookie },
      );
    // RATE_LIMIT_LOGIN_FAILURES: 10 a minute for one email from one address.
    for (let i = 0; i < 10; i++) {
      const res = await login(i % 2 ? a : b, `wrong password ${i}`);
      expect(res.status, `attempt ${i + 1}`).toBe(200);
      expect(await res.text()).toMatch(/email or password/i);
    }
    for (const base of [a, b]) {
      const res = await login(base, "right password!");
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(res.headers.get("set-cookie")).toBeNull();
    }
  }, 60_000);
});
