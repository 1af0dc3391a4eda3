// The token side of the OAuth server as a client sees it: POST /oauth/token
// through the gateway over HTTP, in front of the real organisation, auth and
// webhook services (PostgreSQL, NATS). Codes come straight from the
// GrantStore (the browser flow that issues them is tested elsewhere).
// Introspection, revocation and the bearer check are exercised over RPC; the
// auth outbox publishes grant.revoked and token.revoked, and the webhook
// service deletes a revoked pair's subscriptions.
import { createHash, randomBytes } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService, OAuthErrorSchema } from "../gen/bizcard/auth/v1/auth_pb.js";
import { EventType, GrantRevokedSchema, TokenRevokedSchema, type GrantRevoked, type TokenRevoked } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import type { GrantStore } from "../services/auth/grants/grant-store.js";
import { rateLimited } from "../services/auth/oauth-errors.js";
import type { FailureLimits } from "../services/auth/rate-limit/failure-limits.js";
import { deleteExpired } from "../services/auth/tokens/expired-sweep.js";
import { openAnswer, sealAnswer } from "../services/auth/tokens/retry-answer.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { tokenHash } from "../services/shared/token-hash.js";
import { createAuthApp, createWebhookApp, startPlatform, type AuthApp, type Platform, type StartedService } from "./support/platform.js";
import { waitFor } from "./support/processes.js";
import { rpcError } from "./support/rpc.js";

const TOKEN = "t".repeat(40);
const REDIRECT = "https://app.example.test/callback";
const PUBLIC_REDIRECT = "http://127.0.0.1:8765/cb";
const ALL = "organisation:read webhooks:read webhooks:write contacts:read";


/**
 * The seam a2 fills with PostgreSQL counters; here a plain list of the
 * failures counted, and a set of clients over their limit, so that these
 * tests do not depend on it.
 */
const failures: string[] = [];
const limitedClients = new Set(["bc_limited"]);
const limits: FailureLimits = {
  check: async (kind, subject) => {
    if (kind === "client" && limitedClients.has(subject)) throw rateLimited("invalid_client", 7);
  },
  consume: async (kind, subject) => {
    failures.push(`${kind}:${subject}`);
    if (kind === "client" && limitedClients.has(subject)) throw rateLimited("invalid_client", 7);
  },
  refund: async (kind, subject) => {
    failures.splice(failures.lastIndexOf(`${kind}:${subject}`), 1);
  },
};

let platform: Platform;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<AuthApp>;
let webhook: StartedService<ServiceApp>;
let url: string;
let grants: GrantStore;
let orgA: string;
let orgB: string;
let memberA: string;
let memberB: string;
const grantEvents: GrantRevoked[] = [];
const tokenEvents: TokenRevoked[] = [];

interface Registered {
  id: string;
  secret: string;
}
let confidential: Registered;
let other: Registered;
let publicClient: Registered;
let owned: Registered;

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true" },
    auth: { create: (deps) => createAuthApp(deps, { limits }) },
    webhook: { create: (deps) => createWebhookApp(deps, { resolve: async () => ["93.184.215.14"] }) },
    gateway: true,
  });
  ({ organisation, auth, webhook, base: url } = platform);
  const bus = platform.bus;
  grants = auth.app.grants;

  await bus.consume({ durable: "oauth-token-test-grants", subject: "grant.revoked" }, async (m) => {
    grantEvents.push(fromBinary(GrantRevokedSchema, m.data));
  });
  await bus.consume({ durable: "oauth-token-test-tokens", subject: "token.revoked" }, async (m) => {
    tokenEvents.push(fromBinary(TokenRevokedSchema, m.data));
  });

  const orgs = organisation.client(OrganisationService);
  const a = await orgs.createOrganisation({ name: "Org A", ownerEmail: "a@token.test", ownerPassword: "password-a" });
  const b = await orgs.createOrganisation({ name: "Org B", ownerEmail: "b@token.test", ownerPassword: "password-b" });
  orgA = a.organisation!.id;
  memberA = a.owner!.id;
  orgB = b.organisation!.id;
  memberB = b.owner!.id;

  const register = async (req: Parameters<ReturnType<typeof rpc>["createClient"]>[0]): Promise<Registered> => {
    const res = await rpc().createClient(req);
    return { id: res.client!.clientId, secret: res.clientSecret };
  };
  confidential = await register({ name: "Zapier", redirectUris: [REDIRECT] });
  other = await register({ name: "Make", redirectUris: [REDIRECT] });
  publicClient = await register({ name: "CLI", redirectUris: [PUBLIC_REDIRECT], public: true });
  owned = await register({ name: "A's script", ownerOrganisationId: orgA, scopes: ["organisation:read", "contacts:read"] });
});

afterAll(async () => {
  await platform?.stop();
});

const rpc = () => auth.client(AuthService);

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

async function codeFor(
  client: Registered,
  options: { challenge?: string; redirectUri?: string; scopes?: string[]; organisationId?: string; memberId?: string } = {},
): Promise<string> {
  return grants.issueAuthorizationCode({
    clientId: client.id,
    organisationId: options.organisationId ?? orgA,
    memberId: options.memberId ?? memberA,
    redirectUri: options.redirectUri ?? REDIRECT,
    scopes: options.scopes ?? ALL.split(" "),
    codeChallenge: options.challenge ?? "",
  });
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function token(
  params: Record<string, string>,
  options: { basic?: Registered; json?: boolean } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": options.json ? "application/json" : "application/x-www-form-urlencoded" };
  if (options.basic) {
    const enc = (s: string) => encodeURIComponent(s);
    headers.authorization = `Basic ${Buffer.from(`${enc(options.basic.id)}:${enc(options.basic.secret)}`).toString("base64")}`;
  }
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers,
    body: options.json ? JSON.stringify(params) : new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** client_secret_post credentials. */
const post = (client: Registered) => ({ client_id: client.id, client_secret: client.secret });

function expectTokens(a: Answer, options: { refresh: boolean; scope?: string }): void {
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(a.headers.get("cache-control")).toBe("no-store");
  expect(a.body.access_token).toMatch(/^bca_[A-Za-z0-9_-]{43}$/);
  expect(a.body.token_type).toBe("Bearer");
  expect(a.body.expires_in).toBe(3600);
  expect(a.body.scope).toBe(options.scope ?? ALL);
  if (options.refresh) expect(a.body.refresh_token).toMatch(/^bcr_[A-Za-z0-9_-]{43}$/);
  else expect(a.body).not.toHaveProperty("refresh_token");
}

function expectOAuthError(a: Answer, status: number, error: string, description?: RegExp): void {
  expect(a.status, JSON.stringify(a.body)).toBe(status);
  expect(a.body.error).toBe(error);
  expect(typeof a.body.error_description).toBe("string");
  if (description) expect(a.body.error_description).toMatch(description);
  expect(a.headers.get("cache-control")).toBe("no-store");
  if (status === 401) expect(a.headers.get("www-authenticate")).toMatch(/^Basic /);
}

/** The bearer check the gateway makes: the organisation, or the OAuth error it fails with. */
async function bearer(accessToken: string): Promise<string> {
  try {
    const res = await rpc().authenticateAccessToken({ accessToken });
    return res.organisationId;
  } catch (err) {
    const e = await rpcError(Promise.reject(err));
    expect(e.code).toBe(Code.PermissionDenied);
    return e.findDetails(OAuthErrorSchema)[0]?.error ?? "no detail";
  }
}

async function exchangeCode(client: Registered, options: { scopes?: string[]; organisationId?: string; memberId?: string } = {}) {
  const { verifier, challenge } = pkce();
  const code = await codeFor(client, { challenge, ...options });
  const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, ...post(client) });
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  return a.body as { access_token: string; refresh_token: string; scope: string };
}

async function grantOf(organisationId: string, clientId: string) {
  const { grants: list } = await rpc().listGrants({ organisationId });
  return list.find((g) => g.clientId === clientId);
}

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
    const unknown = await rpcError(rpc().createClient({ name: "X", redirectUris: [REDIRECT], grantTypes: ["password"] }));
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.rawMessage).toMatch(/grant_types.*password/);
    const cc = await rpcError(rpc().createClient({ name: "X", redirectUris: [REDIRECT], grantTypes: ["client_credentials"] }));
    expect(cc.rawMessage).toMatch(/client_credentials/);
    const pub = await rpcError(rpc().createClient({ name: "X", redirectUris: [PUBLIC_REDIRECT], public: true, grantTypes: ["client_credentials"] }));
    expect(pub.code).toBe(Code.InvalidArgument);
    const chosen = await rpc().createClient({ name: "X", redirectUris: [REDIRECT], grantTypes: ["authorization_code"] });
    expect(chosen.client?.grantTypes).toEqual(["authorization_code"]);
  });
});

describe("authorization_code", () => {
  it("exchanges a code with PKCE for an access and a refresh token (client_secret_post, form)", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(confidential, { challenge });
    expect(code).toMatch(/^bcc_[A-Za-z0-9_-]{43}$/);
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, ...post(confidential) });
    expectTokens(a, { refresh: true });
    const who = await rpc().authenticateAccessToken({ accessToken: a.body.access_token as string });
    expect(who).toMatchObject({ organisationId: orgA, clientId: confidential.id, memberId: memberA, scopes: ALL.split(" ") });
  });

  it("accepts client_secret_basic, and a JSON body; a confidential client may skip PKCE", async () => {
    const code = await codeFor(confidential, { scopes: ["organisation:read"] });
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT }, { basic: confidential, json: true });
    expectTokens(a, { refresh: true, scope: "organisation:read" });
  });

  it("refuses both client authentication methods at once", async () => {
    const code = await codeFor(confidential);
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_secret: confidential.secret }, { basic: confidential });
    expectOAuthError(a, 400, "invalid_request", /one client authentication method/);
  });

  it("refuses a wrong secret, an unknown client and a confidential client without its secret: 401 invalid_client, counted", async () => {
    const code = await codeFor(confidential);
    const before = failures.length;
    const wrong = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: confidential.id, client_secret: "bcs_wrong" });
    expectOAuthError(wrong, 401, "invalid_client");
    const basicWrong = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT }, { basic: { id: confidential.id, secret: "nope" } });
    expectOAuthError(basicWrong, 401, "invalid_client");
    const unknown = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: "bc_nobody", client_secret: "x" });
    expectOAuthError(unknown, 401, "invalid_client");
    const none = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: confidential.id });
    expectOAuthError(none, 401, "invalid_client", /secret/);
    expect(failures.slice(before)).toEqual([`client:${confidential.id}`, `client:${confidential.id}`, "client:bc_nobody", `client:${confidential.id}`]);
    // The code was never looked at: it still works.
    expectTokens(await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }), { refresh: true });
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

  it("a replayed code fails with invalid_grant and revokes the grant and the tokens it issued", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(other, { challenge });
    const params = { grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, ...post(other) };
    const first = await token(params);
    expectTokens(first, { refresh: true });
    expect(await bearer(first.body.access_token as string)).toBe(orgA);
    const again = await token(params);
    expectOAuthError(again, 400, "invalid_grant", /already used/);
    expect(await bearer(first.body.access_token as string)).toBe("invalid_token");
    const refresh = await token({ grant_type: "refresh_token", refresh_token: first.body.refresh_token as string, ...post(other) });
    expectOAuthError(refresh, 400, "invalid_grant");
    expect(await grantOf(orgA, other.id)).toBeUndefined();
    await waitFor(() => grantEvents.find((e) => e.clientId === other.id && e.reason === "authorization_code_replay"), 10_000, "grant.revoked");
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
    expectTokens(await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }), { refresh: true });
  });

  it("refuses a redirect_uri that differs from the authorization request's (and the code stays usable)", async () => {
    const code = await codeFor(confidential);
    for (const redirect of [`${REDIRECT}/`, "https://evil.example.test/callback", ""]) {
      const params: Record<string, string> = { grant_type: "authorization_code", code, ...post(confidential) };
      if (redirect) params.redirect_uri = redirect;
      expectOAuthError(await token(params), 400, "invalid_grant", /redirect_uri/);
    }
    expectTokens(await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }), { refresh: true });
  });

  it("checks PKCE: a missing, wrong or malformed verifier, or a verifier for a code without challenge, is invalid_grant", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(confidential, { challenge });
    const send = (extra: Record<string, string>) => token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential), ...extra });
    expectOAuthError(await send({}), 400, "invalid_grant", /code_verifier is required/);
    expectOAuthError(await send({ code_verifier: pkce().verifier }), 400, "invalid_grant", /does not match/);
    // The plain method: the challenge itself sent as verifier.
    expectOAuthError(await send({ code_verifier: challenge }), 400, "invalid_grant", /does not match/);
    expectOAuthError(await send({ code_verifier: "short" }), 400, "invalid_grant", /43 to 128/);
    expectTokens(await send({ code_verifier: verifier }), { refresh: true });

    const plainCode = await codeFor(confidential);
    const downgrade = await token({ grant_type: "authorization_code", code: plainCode, redirect_uri: REDIRECT, code_verifier: verifier, ...post(confidential) });
    expectOAuthError(downgrade, 400, "invalid_grant", /no code_challenge/);
  });

  it("a public client sends only client_id and must have used PKCE", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(publicClient, { challenge, redirectUri: PUBLIC_REDIRECT });
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: PUBLIC_REDIRECT, code_verifier: verifier, client_id: publicClient.id });
    expectTokens(a, { refresh: true });
    const noPkce = await codeFor(publicClient, { redirectUri: PUBLIC_REDIRECT });
    const b = await token({ grant_type: "authorization_code", code: noPkce, redirect_uri: PUBLIC_REDIRECT, client_id: publicClient.id });
    expectOAuthError(b, 400, "invalid_grant", /public client must use PKCE/);
    const withSecret = await token({ grant_type: "authorization_code", code: noPkce, redirect_uri: PUBLIC_REDIRECT, client_id: publicClient.id, client_secret: "guess" });
    expectOAuthError(withSecret, 401, "invalid_client");
  });

  it("refuses an expired code", async () => {
    const code = await codeFor(confidential);
    await auth.app.orm.em
      .fork()
      .execute(`update "auth"."authorization_code" set "expires_at" = now() - interval '1 second' where "hash" = ?`, [tokenHash(code)]);
    expectOAuthError(await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, ...post(confidential) }), 400, "invalid_grant", /expired/);
  });

  it("names missing parameters (invalid_request) and unknown grant types (unsupported_grant_type)", async () => {
    expectOAuthError(await token({ grant_type: "authorization_code", redirect_uri: REDIRECT, ...post(confidential) }), 400, "invalid_request", /code/);
    expectOAuthError(await token({ grant_type: "refresh_token", ...post(confidential) }), 400, "invalid_request", /refresh_token/);
    expectOAuthError(await token({ grant_type: "password", username: "a", password: "b", ...post(confidential) }), 400, "unsupported_grant_type");
    // Straight over RPC too: the auth service does not rely on the gateway's checks.
    const err = await rpcError(rpc().exchangeToken({ grantType: "password", client: { clientId: confidential.id, clientSecret: confidential.secret, method: "client_secret_post" } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(OAuthErrorSchema)[0]?.error).toBe("unsupported_grant_type");
  });

  it("refuses a grant type the client may not use: unauthorized_client", async () => {
    expectOAuthError(await token({ grant_type: "client_credentials", ...post(confidential) }), 400, "unauthorized_client");
    expectOAuthError(await token({ grant_type: "authorization_code", code: "bcc_x", redirect_uri: REDIRECT, ...post(owned) }), 400, "unauthorized_client");
  });
});

describe("refresh_token", () => {
  it("rotates, and a requested scope may only narrow", async () => {
    const first = await exchangeCode(confidential, { scopes: ["organisation:read", "webhooks:read"] });
    const narrowed = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, scope: "webhooks:read", ...post(confidential) });
    expectTokens(narrowed, { refresh: true, scope: "webhooks:read" });
    expect(narrowed.body.refresh_token).not.toBe(first.refresh_token);
    const next = narrowed.body.refresh_token as string;
    // Widening beyond what was granted: refused, and the token is not spent.
    const wider = await token({ grant_type: "refresh_token", refresh_token: next, scope: "webhooks:read contacts:read", ...post(confidential) });
    expectOAuthError(wider, 400, "invalid_scope", /contacts:read/);
    // Without scope: everything originally granted again.
    const again = await token({ grant_type: "refresh_token", refresh_token: next, ...post(confidential) }, { basic: undefined });
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
    expectTokens(await token({ grant_type: "refresh_token", refresh_token: a.body.refresh_token as string, ...post(confidential) }), { refresh: true });
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
      .execute(`update "auth"."refresh_token" set "rotated_at" = now() - interval '1 hour' where "hash" = ?`, [tokenHash(first.refresh_token)]);
    const reuse = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(other) });
    expectOAuthError(reuse, 400, "invalid_grant", /already used/);
    expect(await bearer(rotated.body.access_token as string)).toBe("invalid_token");
    expectOAuthError(await token({ grant_type: "refresh_token", refresh_token: rotated.body.refresh_token as string, ...post(other) }), 400, "invalid_grant");
    expect(await grantOf(orgB, other.id)).toBeUndefined();
    await waitFor(() => grantEvents.find((e) => e.organisationId === orgB && e.reason === "refresh_token_reuse"), 10_000, "grant.revoked");
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
    expectOAuthError(await token({ grant_type: "client_credentials", scope: "webhooks:write", ...post(owned) }), 400, "invalid_scope");
  });
});

describe("a strict client library (oauth4webapi) accepts the answers", () => {
  const insecure = { [oauth.allowInsecureRequests]: true };
  const as = () => ({ issuer: "http://localhost:8080", token_endpoint: `${url}/oauth/token`, authorization_response_iss_parameter_supported: true });

  it("authorization_code with PKCE and client_secret_basic, then refresh with client_secret_post", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const challenge = await oauth.calculatePKCECodeChallenge(verifier);
    const code = await codeFor(confidential, { challenge });
    const client = { client_id: confidential.id };
    const callback = oauth.validateAuthResponse(as(), client, new URL(`${REDIRECT}?code=${code}&state=s1&iss=${encodeURIComponent(as().issuer)}`), "s1");
    const response = await oauth.authorizationCodeGrantRequest(as(), client, oauth.ClientSecretBasic(confidential.secret), callback, REDIRECT, verifier, insecure);
    const tokens = await oauth.processAuthorizationCodeResponse(as(), client, response);
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 3600, scope: ALL });
    expect(tokens.refresh_token).toMatch(/^bcr_/);
    const refreshed = await oauth.processRefreshTokenResponse(
      as(),
      client,
      await oauth.refreshTokenGrantRequest(as(), client, oauth.ClientSecretPost(confidential.secret), tokens.refresh_token!, insecure),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it("a public client with PKCE (None), and client_credentials", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    const code = await codeFor(publicClient, { challenge: await oauth.calculatePKCECodeChallenge(verifier), redirectUri: PUBLIC_REDIRECT });
    const client = { client_id: publicClient.id };
    const callback = oauth.validateAuthResponse(as(), client, new URL(`${PUBLIC_REDIRECT}?code=${code}&iss=${encodeURIComponent(as().issuer)}`), oauth.expectNoState);
    const res = await oauth.authorizationCodeGrantRequest(as(), client, oauth.None(), callback, PUBLIC_REDIRECT, verifier, insecure);
    expect((await oauth.processAuthorizationCodeResponse(as(), client, res)).access_token).toMatch(/^bca_/);

    const cc = await oauth.processClientCredentialsResponse(
      as(),
      { client_id: owned.id },
      await oauth.clientCredentialsGrantRequest(as(), { client_id: owned.id }, oauth.ClientSecretBasic(owned.secret), { scope: "contacts:read" }, insecure),
    );
    expect(cc).toMatchObject({ token_type: "bearer", scope: "contacts:read" });
    expect(cc.refresh_token).toBeUndefined();
  });

  it("errors reach the library as RFC 6749 errors", async () => {
    const client = { client_id: confidential.id };
    const res = await oauth.refreshTokenGrantRequest(as(), client, oauth.ClientSecretPost(confidential.secret), "bcr_unknown", insecure);
    await expect(oauth.processRefreshTokenResponse(as(), client, res)).rejects.toMatchObject({ error: "invalid_grant", status: 400 });
  });
});

describe("introspection (RFC 7662) and revocation (RFC 7009) over RPC", () => {
  const creds = (client: Registered) => ({ clientId: client.id, clientSecret: client.secret, method: "client_secret_basic" });

  it("introspection: a confidential client sees its own live tokens; anything else is inactive", async () => {
    const tokens = await exchangeCode(confidential, { scopes: ["organisation:read"] });
    const mine = await rpc().introspectToken({ client: creds(confidential), token: tokens.access_token });
    expect(mine).toMatchObject({ active: true, scope: "organisation:read", clientId: confidential.id, tokenType: "Bearer", sub: orgA });
    expect(Number(mine.exp) - Number(mine.iat)).toBe(3600);
    expect(mine.iss).toMatch(/^http/);
    const refresh = await rpc().introspectToken({ client: creds(confidential), token: tokens.refresh_token, tokenTypeHint: "refresh_token" });
    expect(refresh).toMatchObject({ active: true, clientId: confidential.id, sub: orgA });
    expect((await rpc().introspectToken({ client: creds(other), token: tokens.access_token })).active).toBe(false);
    expect((await rpc().introspectToken({ client: creds(confidential), token: "bca_unknown" })).active).toBe(false);
    const pub = await rpcError(rpc().introspectToken({ client: { clientId: publicClient.id, method: "none" }, token: tokens.access_token }));
    expect(pub.code).toBe(Code.PermissionDenied);
    expect(pub.findDetails(OAuthErrorSchema)[0]?.error).toBe("invalid_client");
    const wrong = await rpcError(rpc().introspectToken({ client: { ...creds(confidential), clientSecret: "x" }, token: tokens.access_token }));
    expect(wrong.findDetails(OAuthErrorSchema)[0]?.error).toBe("invalid_client");
  });

  it("revoking an access token ends it and publishes token.revoked; another client's or an unknown token is a no-op", async () => {
    const tokens = await exchangeCode(confidential);
    await rpc().revokeToken({ client: creds(other), token: tokens.access_token });
    expect(await bearer(tokens.access_token)).toBe(orgA);
    await rpc().revokeToken({ client: creds(confidential), token: "bca_nothing" });
    await rpc().revokeToken({ client: creds(confidential), token: tokens.access_token, tokenTypeHint: "access_token" });
    expect(await bearer(tokens.access_token)).toBe("invalid_token");
    const event = await waitFor(() => tokenEvents.find((e) => e.accessTokenHashes.includes(tokenHash(tokens.access_token))), 10_000, "token.revoked");
    expect(event).toMatchObject({ organisationId: orgA, clientId: confidential.id });
    // The refresh token lives on.
    expectTokens(await token({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...post(confidential) }), { refresh: true });
  });

  it("revoking a refresh token ends its family and the family's access tokens, not the grant's other families", async () => {
    const one = await exchangeCode(confidential);
    const two = await exchangeCode(confidential);
    const rotated = await token({ grant_type: "refresh_token", refresh_token: one.refresh_token, ...post(confidential) });
    await rpc().revokeToken({ client: { clientId: confidential.id, clientSecret: confidential.secret, method: "client_secret_post" }, token: rotated.body.refresh_token as string });
    expect(await bearer(one.access_token)).toBe("invalid_token");
    expect(await bearer(rotated.body.access_token as string)).toBe("invalid_token");
    expectOAuthError(await token({ grant_type: "refresh_token", refresh_token: rotated.body.refresh_token as string, ...post(confidential) }), 400, "invalid_grant");
    expect(await bearer(two.access_token)).toBe(orgA);
    const event = await waitFor(() => tokenEvents.find((e) => e.accessTokenHashes.includes(tokenHash(one.access_token))), 10_000, "token.revoked");
    expect(event.accessTokenHashes).toContain(tokenHash(rotated.body.access_token as string));
  });

  it("a public client may revoke its own tokens with its client_id", async () => {
    const { verifier, challenge } = pkce();
    const code = await codeFor(publicClient, { challenge, redirectUri: PUBLIC_REDIRECT });
    const a = await token({ grant_type: "authorization_code", code, redirect_uri: PUBLIC_REDIRECT, code_verifier: verifier, client_id: publicClient.id });
    await rpc().revokeToken({ client: { clientId: publicClient.id, method: "none" }, token: a.body.access_token as string });
    expect(await bearer(a.body.access_token as string)).toBe("invalid_token");
  });

  it("the bearer check refuses unknown and expired tokens; the sweep deletes expired ones only", async () => {
    expect(await bearer("bca_unknown")).toBe("invalid_token");
    expect(await bearer("")).toBe("invalid_token");
    const a = await token({ grant_type: "client_credentials", ...post(owned) });
    const live = await token({ grant_type: "client_credentials", ...post(owned) });
    const em = auth.app.orm.em.fork();
    await em.execute(`update "auth"."access_token" set "expires_at" = now() - interval '1 second' where "hash" = ?`, [
      tokenHash(a.body.access_token as string),
    ]);
    expect(await bearer(a.body.access_token as string)).toBe("invalid_token");
    expect(await deleteExpired(auth.app.orm, "auth")).toBeGreaterThanOrEqual(1);
    const rows: { hash: string }[] = await em.execute(`select "hash" from "auth"."access_token" where "hash" in (?, ?)`, [
      tokenHash(a.body.access_token as string),
      tokenHash(live.body.access_token as string),
    ]);
    expect(rows.map((r) => r.hash)).toEqual([tokenHash(live.body.access_token as string)]);
    expect(await bearer(live.body.access_token as string)).toBe(orgA);
  });
});

describe("grants", () => {
  it("lists an organisation's grants with client names, newest first", async () => {
    const c = await rpc().createClient({ name: "Newest <b>app</b>", redirectUris: [REDIRECT] });
    await codeFor({ id: c.client!.clientId, secret: c.clientSecret }, { organisationId: orgB, memberId: memberB, scopes: ["organisation:read"] });
    await codeFor(confidential, { organisationId: orgB, memberId: memberB, scopes: ["webhooks:read"] });
    const { grants: list } = await rpc().listGrants({ organisationId: orgB });
    expect(list.map((g) => g.clientName)).toEqual(["Zapier", "Newest <b>app</b>"]);
    expect(list[0]).toMatchObject({ organisationId: orgB, clientId: confidential.id, scopes: ["webhooks:read"] });
    // A second consent widens the grant's scopes and moves its update time.
    await codeFor(confidential, { organisationId: orgB, memberId: memberB, scopes: ["organisation:read"] });
    const widened = await grantOf(orgB, confidential.id);
    expect(widened?.scopes).toEqual(["organisation:read", "webhooks:read"]);
    const invalid = await rpcError(rpc().listGrants({ organisationId: "nope" }));
    expect(invalid.code).toBe(Code.InvalidArgument);
  });

  it("RevokeGrant withdraws access, publishes grant.revoked, and the webhook service deletes the pair's subscriptions", async () => {
    const hooks = webhook.client(WebhookService);
    const tokens = await exchangeCode(confidential);
    const cc = await token({ grant_type: "client_credentials", ...post(owned) });
    const pair = { organisationId: orgA, clientId: confidential.id };
    const keep = { organisationId: orgA, clientId: owned.id };
    await hooks.createSubscription({ owner: pair, targetUrl: "https://hooks.example.test/a", eventType: EventType.CONTACT_CREATED });
    await hooks.createSubscription({ owner: pair, targetUrl: "https://hooks.example.test/b", eventType: EventType.CONTACT_UPDATED });
    await hooks.createSubscription({ owner: keep, targetUrl: "https://hooks.example.test/c", eventType: EventType.CONTACT_CREATED });

    await rpc().revokeGrant(pair);
    expect(await bearer(tokens.access_token)).toBe("invalid_token");
    expectOAuthError(await token({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, ...post(confidential) }), 400, "invalid_grant");
    expect(await bearer(cc.body.access_token as string)).toBe(orgA);
    await waitFor(() => grantEvents.find((e) => e.clientId === confidential.id && e.organisationId === orgA && e.reason === "withdrawn"), 10_000, "grant.revoked");
    await waitFor(async () => (await hooks.listSubscriptions({ owner: pair })).subscriptions.length === 0, 10_000, "subscriptions deleted");
    expect((await hooks.listSubscriptions({ owner: keep })).subscriptions).toHaveLength(1);

    const again = await rpcError(rpc().revokeGrant(pair));
    expect(again.code).toBe(Code.NotFound);
    // Withdrawing the owned client's access ends its client_credentials tokens too.
    await rpc().revokeGrant(keep);
    expect(await bearer(cc.body.access_token as string)).toBe("invalid_token");
    await waitFor(async () => (await hooks.listSubscriptions({ owner: keep })).subscriptions.length === 0, 10_000, "subscriptions deleted");
  });
});
