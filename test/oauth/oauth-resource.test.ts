// The gateway's resource side as a client sees it, over real HTTP, in front of
// the real auth and organisation services: RFC 6750 bearer checks on
// GET /oauth/me, revocation (RFC 7009) and introspection (RFC 7662), the
// RFC 8414 metadata document, and a revoked token stopping within a second on
// two gateways that share the bus; an expired token; failure limits that hold
// across two gateways.
import * as oauth from "oauth4webapi";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import type { TestDatabase } from "../support/backends.js";
import { startPlatform, type Platform, type StartedService } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

const { Client } = pg;
const TOKEN = "r".repeat(40);
const FORM = "application/x-www-form-urlencoded";

let platform: Platform;
let db: TestDatabase;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let a: string;
let b: string;
let orgId: string;
let orgName: string;
/** An application the organisation owns: client_credentials, every scope. */
let app: { id: string; secret: string };
/** Another one, allowed only webhooks:read. */
let narrow: { id: string; secret: string };
let publicClientId: string;

beforeAll(async () => {
  // Gateway a listens where PUBLIC_URL (the issuer, and the REST API's
  // resource identifier: the audience of its tokens) says; gateway b, with
  // its own bus connection (on NATS: a second process's view), is another
  // process of the same deployment: the same PUBLIC_URL, another address.
  platform = await startPlatform({ token: TOKEN, auth: true, gateway: { publicUrlPort: true, bus: true } });
  ({ db, organisation, auth } = platform);
  const { bus, config: baseConfig } = platform;
  // On NATS, the stream exists before the timed revocations (its creation is not what they measure).
  if (bus.kind === "nats") await bus.publish(`${baseConfig.NATS_SUBJECT_PREFIX}.warm.up`, new Uint8Array(), "warm-up");
  a = platform.base;
  b = (await platform.addGateway({ name: "gateway-b", publicUrl: a, ownBus: true })).base;
  orgName = "Resource Cards";
  const created = await organisation.client(OrganisationService).createOrganisation({ name: orgName, ownerEmail: "owner@resource.test", ownerPassword: "password-r" });
  orgId = created.organisation!.id;
  const clients = auth.client(AuthService);
  const full = await clients.createClient({ name: "Sync", ownerOrganisationId: orgId });
  app = { id: full.client!.clientId, secret: full.clientSecret };
  const limited = await clients.createClient({ name: "Reader", ownerOrganisationId: orgId, scopes: ["webhooks:read"] });
  narrow = { id: limited.client!.clientId, secret: limited.clientSecret };
  const pub = await clients.createClient({ name: "CLI", redirectUris: ["http://127.0.0.1:8765/cb"], public: true });
  publicClientId = pub.client!.clientId;
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

const post = (url: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": FORM, ...headers }, body: new URLSearchParams(params).toString() });
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

async function accessToken(client: { id: string; secret: string }, scope?: string): Promise<string> {
  const res = await post(`${a}/oauth/token`, { grant_type: "client_credentials", client_id: client.id, client_secret: client.secret, ...(scope ? { scope } : {}) });
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token;
}

const me = (base: string, token: string) => fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });

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
    const response = await oauth.discoveryRequest(new URL(b), { algorithm: "oauth2", [oauth.allowInsecureRequests]: true });
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
      expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="bizcard", resource_metadata="${a}/.well-known/oauth-protected-resource"`);
      expect(await res.json()).toEqual({ error: "invalid_token", error_description: expect.any(String) });
    }
  });

  it("a token in the query string is refused (400 invalid_request), even with a valid header", async () => {
    const token = await accessToken(app);
    for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
      const res = await fetch(`${a}/oauth/me?access_token=${token}`, { headers });
      expect(res.status).toBe(400);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_request", error_description="[^"]+"$/);
      expect(await res.json()).toEqual({ error: "invalid_request", error_description: expect.stringMatching(/Authorization header/) });
    }
  });

  it("an unknown, malformed or refresh-less garbage token: 401 invalid_token with a description", async () => {
    for (const token of ["bca_doesnotexist0000000000000000000000000000000", "not a token", "a,b", `${"x".repeat(600)}`]) {
      const res = await fetch(`${a}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status, token).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_token", error_description="[^"]+"$/);
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
    expect(await res.json()).toEqual({ error: "insufficient_scope", error_description: "this resource needs the scope organisation:read" });
  });

  it("a token narrowed to other scopes at the token endpoint is refused the same way", async () => {
    const token = await accessToken(app, "webhooks:read");
    expect((await me(a, token)).status).toBe(403);
  });
});

describe("revocation reaches every gateway within a second", () => {
  /** Both gateways have the token cached, then `revoke` runs; both refuse it within a second. */
  async function stopsEverywhere(token: string, revoke: () => Promise<void>): Promise<void> {
    for (const base of [a, b]) for (let i = 0; i < 3; i++) expect((await me(base, token)).status).toBe(200);
    const started = Date.now();
    await revoke();
    await waitFor(async () => {
      const statuses = await Promise.all([me(a, token), me(b, token)].map(async (p) => (await p).status));
      return statuses.every((s) => s === 401) ? true : undefined;
    }, 5000, "both gateways to refuse the revoked token");
    expect(Date.now() - started).toBeLessThan(1000);
  }

  it("POST /oauth/revoke of an access token (token.revoked)", async () => {
    const token = await accessToken(app);
    const other = await accessToken(app);
    await stopsEverywhere(token, async () => {
      const res = await post(`${a}/oauth/revoke`, { token, token_type_hint: "access_token" }, { authorization: basic(app.id, app.secret) });
      expect(res.status).toBe(200);
    });
    // The grant stays: another token of the pair still works.
    expect((await me(b, other)).status).toBe(200);
  });

  it("RevokeGrant (grant.revoked): every token of the pair", async () => {
    const clients = auth.client(AuthService);
    const own = await clients.createClient({ name: "Withdrawn", ownerOrganisationId: orgId });
    const client = { id: own.client!.clientId, secret: own.clientSecret };
    const [first, second] = [await accessToken(client), await accessToken(client)];
    const unrelated = await accessToken(app);
    await stopsEverywhere(first, async () => {
      await clients.revokeGrant({ organisationId: orgId, clientId: client.id });
    });
    for (const base of [a, b]) {
      expect((await me(base, second)).status).toBe(401);
      expect((await me(base, unrelated)).status).toBe(200);
    }
  });
});

describe("POST /oauth/revoke (RFC 7009)", () => {
  it("200 with {} as JSON, no-store, for a known token, an unknown one, form or JSON, Basic or post", async () => {
    const token = await accessToken(app);
    const answers = [
      await post(`${a}/oauth/revoke`, { token: "bca_unknown", client_id: app.id, client_secret: app.secret }),
      await fetch(`${a}/oauth/revoke`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: basic(app.id, app.secret) },
        body: JSON.stringify({ token }),
      }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("{}");
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    expect((await me(a, token)).status).toBe(401);
  });

  it("without client authentication: 401 invalid_client with WWW-Authenticate", async () => {
    const res = await post(`${a}/oauth/revoke`, { token: "bca_x" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect(await res.json()).toEqual({ error: "invalid_client", error_description: expect.any(String) });
  });

  it("a wrong secret: 401 invalid_client", async () => {
    const res = await post(`${a}/oauth/revoke`, { token: "bca_x" }, { authorization: basic(app.id, "bcs_wrong") });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
  });

  it("without token: 400 invalid_request", async () => {
    const res = await post(`${a}/oauth/revoke`, { client_id: app.id, client_secret: app.secret });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "invalid_request", error_description: "token is required" });
  });
});

describe("POST /oauth/introspect (RFC 7662)", () => {
  it("an active token: active, scope, client_id, token_type, exp, iat, sub, iss", async () => {
    const token = await accessToken(app, "organisation:read webhooks:read");
    const res = await post(`${a}/oauth/introspect`, { token }, { authorization: basic(app.id, app.secret) });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { exp: number; iat: number; iss: unknown };
    expect(body).toMatchObject({ active: true, scope: "organisation:read webhooks:read", client_id: app.id, token_type: expect.stringMatching(/^bearer$/i), sub: orgId });
    expect(body.exp - body.iat).toBeGreaterThan(0);
    expect(typeof body.iss).toBe("string");
  });

  it("a revoked or unknown token: just {active: false}", async () => {
    const token = await accessToken(app);
    await post(`${a}/oauth/revoke`, { token }, { authorization: basic(app.id, app.secret) });
    for (const t of [token, "bca_unknown"]) {
      const res = await post(`${a}/oauth/introspect`, { token: t, client_id: app.id, client_secret: app.secret });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ active: false });
    }
  });

  it("only for confidential clients: a public client or none at all is 401 invalid_client", async () => {
    for (const res of [await post(`${a}/oauth/introspect`, { token: "bca_x", client_id: publicClientId }), await post(`${a}/oauth/introspect`, { token: "bca_x" })]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
    }
  });
});

describe("an expired access token (RFC 6750 §3.1)", () => {
  it("is 401 invalid_token with WWW-Authenticate", async () => {
    const token = await accessToken(app, "organisation:read");
    // Expired as if its hour had passed: the auth service compares with now().
    const pg = new Client({ connectionString: db.url });
    await pg.connect();
    try {
      const updated = await pg.query(`update "auth"."access_token" set "expires_at" = now() - interval '1 second' where "hash" = $1`, [tokenHash(token)]);
      expect(updated.rowCount).toBe(1);
    } finally {
      await pg.end();
    }
    const res = await me(b, token);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="bizcard", resource_metadata="[^"]+", error="invalid_token"/);
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
      const res = await post(`${i % 2 ? a : b}/oauth/token`, { grant_type: "client_credentials", client_id: id, client_secret: `wrong-${i}` });
      expect(res.status, `attempt ${i + 1}`).toBe(401);
    }
    for (const base of [a, b]) {
      const res = await post(`${base}/oauth/token`, { grant_type: "client_credentials", client_id: id, client_secret: target.clientSecret });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
    }
  });

  it("failed logins spread over two gateways: past the limit, the next is a 429 page with Retry-After", async () => {
    await organisation.client(OrganisationService).createMember({ organisationId: orgId, email: "limits@resource.test", password: "right password!" });
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
      post(`${base}${interaction}/login`, { csrf_token: csrf!, form_token: form!, email: "limits@resource.test", password }, { cookie });
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
