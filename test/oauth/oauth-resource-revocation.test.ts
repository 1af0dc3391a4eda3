// Revocation (RFC 7009) and introspection (RFC 7662) at the gateway, over real
// HTTP, in front of the real auth and organisation services; and a revoked
// token stopping within a second on two gateways that share the bus.
import { describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { waitFor } from "../support/processes.js";
import {
  a,
  accessToken,
  app,
  auth,
  b,
  basic,
  me,
  orgId,
  post,
  publicClientId,
  useResourceSuite,
} from "../support/resource-suite.js";

useResourceSuite();

describe("revocation reaches every gateway within a second", () => {
  /** Both gateways have the token cached, then `revoke` runs; both refuse it within a second. */
  async function stopsEverywhere(token: string, revoke: () => Promise<void>): Promise<void> {
    for (const base of [a, b]) for (let i = 0; i < 3; i++) expect((await me(base, token)).status).toBe(200);
    const started = Date.now();
    await revoke();
    await waitFor(
      async () => {
        const statuses = await Promise.all([me(a, token), me(b, token)].map(async (p) => (await p).status));
        return statuses.every((s) => s === 401) ? true : undefined;
      },
      5000,
      "both gateways to refuse the revoked token",
    );
    expect(Date.now() - started).toBeLessThan(1000);
  }

  it("POST /oauth/revoke of an access token (token.revoked)", async () => {
    const token = await accessToken(app);
    const other = await accessToken(app);
    await stopsEverywhere(token, async () => {
      const res = await post(
        `${a}/oauth/revoke`,
        { token, token_type_hint: "access_token" },
        { authorization: basic(app.id, app.secret) },
      );
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
    expect(body).toMatchObject({
      active: true,
      scope: "organisation:read webhooks:read",
      client_id: app.id,
      token_type: expect.stringMatching(/^bearer$/i),
      sub: orgId,
    });
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
    for (const res of [
      await post(`${a}/oauth/introspect`, { token: "bca_x", client_id: publicClientId }),
      await post(`${a}/oauth/introspect`, { token: "bca_x" }),
    ]) {
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Basic /);
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
    }
  });
});
