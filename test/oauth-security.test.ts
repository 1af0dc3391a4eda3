// A second look at the OAuth server as an attacker or an unlucky client sees
// it: the real auth service (PostgreSQL failure limits, the real GrantStore)
// behind the gateway over HTTP. Bursts of parallel guesses against the
// failure limits, RFC 6749 §4.1.3 for a request that named no redirect_uri,
// and revocations racing the issue of tokens under the same grant.
import { createHash, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthorizationParametersSchema,
  AuthService,
  ConsentDecision,
  OAuthErrorSchema,
  type AuthorizationParameters,
} from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { tokenHash as tokenHashOf } from "../services/shared/token-hash.js";
import type { TestDatabase } from "./support/backends.js";
import { startPlatform, type AuthApp, type Platform, type StartedService } from "./support/platform.js";
import { waitFor } from "./support/processes.js";
import { rpcError } from "./support/rpc.js";

const TOKEN = "s".repeat(40);
const REDIRECT = "https://app.example.test/callback";
const PASSWORD = "correct horse battery";
const ISSUER = "https://auth.security.test";

let platform: Platform;
let db: TestDatabase;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<AuthApp>;
let url: string;
let orgId: string;

interface Registered {
  id: string;
  secret: string;
}
let app: Registered;
const LOGIN_LIMIT = 3;

beforeAll(async () => {
  // The real app: PostgreSQL failure limits, the client's at its default (10 a minute per
  // client and address), the login's at LOGIN_LIMIT (each login costs a scrypt derivation,
  // about 0.5 s of CPU: fewer make the test fast, and a busy machine no reason to fail).
  platform = await startPlatform({
    token: TOKEN,
    config: { PUBLIC_URL: ISSUER },
    auth: { config: { RATE_LIMIT_LOGIN_FAILURES: String(LOGIN_LIMIT), RPC_TIMEOUT_MS: "30000" } },
    gateway: true,
    member: { organisation: "Acme", email: "ada@security.test", password: PASSWORD },
  });
  ({ db, organisation, auth, base: url, organisationId: orgId } = platform);
  app = await register("Zapier");
});

afterAll(async () => {
  await platform?.stop();
});

const rpc = () => auth.client(AuthService);
const oauthError = (err: ConnectError) => err.findDetails(OAuthErrorSchema)[0];

async function register(name: string, redirectUris = [REDIRECT]): Promise<Registered> {
  const res = await rpc().createClient({ name, redirectUris });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, string>;
}

async function token(params: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, string> };
}

const post = (client: Registered) => ({ client_id: client.id, client_secret: client.secret });

let sessionId: string | undefined;

async function loginOnce(): Promise<string> {
  const { interactionId } = await rpc().startAccountLogin({});
  const { interaction } = await rpc().getInteraction({ interactionId });
  const res = await rpc().login({ interactionId, csrfToken: interaction!.csrfToken, email: "ada@security.test", password: PASSWORD, remoteAddress: "192.0.2.200" });
  return res.sessionId;
}

/** A code from the browser flow over RPC (authorization request, login, consent), as the gateway drives it. */
async function consentedCode(client: Registered, p: Partial<Omit<AuthorizationParameters, "$typeName" | "$unknown">> = {}) {
  const { verifier, challenge } = pkce();
  const parameters = create(AuthorizationParametersSchema, {
    responseType: "code",
    clientId: client.id,
    redirectUri: REDIRECT,
    state: "st",
    codeChallenge: challenge,
    codeChallengeMethod: "S256",
    ...p,
  });
  // One login for the whole file: a live session binds each new interaction at once.
  sessionId ??= await loginOnce();
  const started = await rpc().startAuthorization({ parameters, sessionId });
  expect(started.redirectTo).toBe("");
  const { interaction } = await rpc().getInteraction({ interactionId: started.interactionId, sessionId });
  expect(interaction!.loggedIn).toBe(true);
  const res = await rpc().decideConsent({
    interactionId: started.interactionId,
    sessionId,
    csrfToken: interaction!.csrfToken,
    decision: ConsentDecision.ALLOW,
    parameters: interaction!.parameters,
  });
  const redirect = new URL(res.redirectTo);
  return { code: redirect.searchParams.get("code")!, verifier, redirect };
}

async function tokensFor(client: Registered) {
  const { code, verifier } = await consentedCode(client);
  const a = await token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, ...post(client) });
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  return a.body as { access_token: string; refresh_token: string };
}

/** The bearer check the gateway makes: the organisation, or the OAuth error it fails with. */
async function bearer(accessToken: string): Promise<string> {
  try {
    return (await rpc().authenticateAccessToken({ accessToken })).organisationId;
  } catch (err) {
    return oauthError(ConnectError.from(err))?.error ?? "no detail";
  }
}

const count = <T>(items: T[], pick: (t: T) => boolean) => items.filter(pick).length;

describe("failure limits count atomically: a parallel burst cannot outrun them", () => {
  it("of a burst of 25 parallel wrong client secrets at most 10 are judged (401); the rest, and then the right secret, are 429", async () => {
    const target = await register("Burst target");
    const burst = await Promise.all(
      Array.from({ length: 25 }, () => token({ grant_type: "authorization_code", code: "bcc_x", redirect_uri: REDIRECT, client_id: target.id, client_secret: "bcs_guess" })),
    );
    expect(count(burst, (a) => a.status === 401 && a.body.error === "invalid_client")).toBeLessThanOrEqual(10);
    expect(count(burst, (a) => a.status === 429)).toBeGreaterThanOrEqual(15);
    expect(count(burst, (a) => a.status === 401 || a.status === 429)).toBe(25);
    const right = await token({ grant_type: "authorization_code", code: "bcc_x", redirect_uri: REDIRECT, ...post(target) });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("a right secret counts nothing (the hot path writes no counter): many successes in a row are never limited", async () => {
    const client = await register("Busy");
    const counters = async () => (await auth.app.orm.em.fork().execute(`select count(*)::int as "n" from "auth"."rate_limit"`))[0].n as number;
    const before = await counters();
    for (let i = 0; i < 15; i++) {
      // Invalid grant (400), but only after the client authenticated.
      const a = await token({ grant_type: "authorization_code", code: "bcc_unknown", redirect_uri: REDIRECT, ...post(client) });
      expect(a.status, JSON.stringify(a.body)).toBe(400);
    }
    expect(await counters()).toBe(before);
  });

  it("of a burst of 20 parallel wrong passwords at most LOGIN_LIMIT are judged; the rest, and then the right password, are refused", async () => {
    await organisation.client(OrganisationService).createMember({ organisationId: orgId, email: "burst@security.test", password: PASSWORD });
    const { interactionId } = await rpc().startAccountLogin({});
    const { interaction } = await rpc().getInteraction({ interactionId });
    const attempt = (password: string) =>
      rpcError(rpc().login({ interactionId, csrfToken: interaction!.csrfToken, email: "burst@security.test", password, remoteAddress: "198.51.100.7" }));
    const burst = await Promise.all(Array.from({ length: 20 }, () => attempt("wrong password!")));
    expect(count(burst, (e) => oauthError(e)?.error === "invalid_credentials" && e.code === Code.PermissionDenied)).toBeLessThanOrEqual(LOGIN_LIMIT);
    expect(count(burst, (e) => e.code === Code.ResourceExhausted)).toBeGreaterThanOrEqual(20 - LOGIN_LIMIT);
    const right = await attempt(PASSWORD);
    expect(right.code).toBe(Code.ResourceExhausted);
    expect(oauthError(right)?.retryAfterSeconds).toBeGreaterThan(0);
  });

  it("a right password gives its point back: many logins in a row are never limited", async () => {
    const { interactionId } = await rpc().startAccountLogin({});
    const { interaction } = await rpc().getInteraction({ interactionId });
    for (let i = 0; i <= LOGIN_LIMIT; i++) {
      const res = await rpc().login({ interactionId, csrfToken: interaction!.csrfToken, email: "ada@security.test", password: PASSWORD, remoteAddress: "198.51.100.8" });
      expect(res.sessionId).toMatch(/^bcsess_/);
    }
  });
});

describe("RFC 6749 §4.1.3: a request that named no redirect_uri", () => {
  it("its code is exchanged with the registered redirect_uri, or none; never with another", async () => {
    const withIt = await consentedCode(app, { redirectUri: "" });
    expect(`${withIt.redirect.origin}${withIt.redirect.pathname}`).toBe(REDIRECT);
    const a = await token({ grant_type: "authorization_code", code: withIt.code, redirect_uri: REDIRECT, code_verifier: withIt.verifier, ...post(app) });
    expect(a.status, JSON.stringify(a.body)).toBe(200);

    const without = await consentedCode(app, { redirectUri: "" });
    const b = await token({ grant_type: "authorization_code", code: without.code, code_verifier: without.verifier, ...post(app) });
    expect(b.status, JSON.stringify(b.body)).toBe(200);

    const other = await consentedCode(app, { redirectUri: "" });
    const c = await token({ grant_type: "authorization_code", code: other.code, redirect_uri: "https://evil.example.test/callback", code_verifier: other.verifier, ...post(app) });
    expect(c.status).toBe(400);
    expect(c.body.error).toBe("invalid_grant");
  });

  it("a request that named it: the token request must repeat it", async () => {
    const named = await consentedCode(app);
    const a = await token({ grant_type: "authorization_code", code: named.code, code_verifier: named.verifier, ...post(app) });
    expect(a.status).toBe(400);
    expect(a.body.error).toBe("invalid_grant");
  });
});

describe("consent", () => {
  it("two parallel posts of one consent: exactly one code", async () => {
    const { challenge } = pkce();
    const parameters = create(AuthorizationParametersSchema, {
      responseType: "code",
      clientId: app.id,
      redirectUri: REDIRECT,
      state: "st",
      codeChallenge: challenge,
      codeChallengeMethod: "S256",
    });
    const started = await rpc().startAuthorization({ parameters });
    const { interaction } = await rpc().getInteraction({ interactionId: started.interactionId });
    const login = await rpc().login({
      interactionId: started.interactionId,
      csrfToken: interaction!.csrfToken,
      email: "ada@security.test",
      password: PASSWORD,
      remoteAddress: "192.0.2.201",
    });
    const decide = () =>
      rpc()
        .decideConsent({
          interactionId: started.interactionId,
          sessionId: login.sessionId,
          csrfToken: interaction!.csrfToken,
          decision: ConsentDecision.ALLOW,
          parameters: login.interaction!.parameters,
        })
        .then(
          (r) => r.redirectTo,
          (e) => ConnectError.from(e).code,
        );
    const answers = await Promise.all([decide(), decide(), decide()]);
    expect(count(answers, (a) => typeof a === "string" && a.includes("code="))).toBe(1);
    expect(count(answers, (a) => a === Code.NotFound)).toBe(2);
  });
});

describe("refresh tokens", () => {
  it("within the window, a retried refresh gets the same pair only while that pair's refresh token is unused; after, it is reuse", async () => {
    const client = await register("Retrier");
    const first = await tokensFor(client);
    const second = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(second.status).toBe(200);
    // The answer was lost: the same token again gets the same pair.
    const retried = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(retried.body).toEqual(expect.objectContaining({ access_token: second.body.access_token, refresh_token: second.body.refresh_token }));
    const third = await token({ grant_type: "refresh_token", refresh_token: second.body.refresh_token!, ...post(client) });
    expect(third.status).toBe(200);
    // The first token again, though its successor was used: not a lost answer. Reuse: the grant ends.
    const stale = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    expect(stale.status).toBe(400);
    expect(stale.body.error).toBe("invalid_grant");
    expect(stale.body).not.toHaveProperty("access_token");
    expect(await bearer(third.body.access_token!)).toBe("invalid_token");
    expect((await token({ grant_type: "refresh_token", refresh_token: third.body.refresh_token!, ...post(client) })).status).toBe(400);
  });

  it("RFC 7009: revoking an already rotated refresh token ends its whole family", async () => {
    const client = await register("Revoker");
    const first = await tokensFor(client);
    const second = await token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(client) });
    await rpc().revokeToken({ client: { clientId: client.id, clientSecret: client.secret, method: "client_secret_basic" }, token: first.refresh_token });
    expect(await bearer(second.body.access_token!)).toBe("invalid_token");
    expect((await token({ grant_type: "refresh_token", refresh_token: second.body.refresh_token!, ...post(client) })).status).toBe(400);
  });
});

describe("interactions", () => {
  it("an expired interaction can neither be shown, logged into nor consented to", async () => {
    sessionId ??= await loginOnce();
    const parameters = create(AuthorizationParametersSchema, { responseType: "code", clientId: app.id, redirectUri: REDIRECT, state: "st" });
    const { interactionId } = await rpc().startAuthorization({ parameters, sessionId });
    const { interaction } = await rpc().getInteraction({ interactionId, sessionId });
    await auth.app.orm.em.fork().execute(`update "auth"."interaction" set "expires_at" = now() - interval '1 second' where "id" = ?`, [interactionId]);
    expect((await rpcError(rpc().getInteraction({ interactionId }))).code).toBe(Code.NotFound);
    const csrfToken = interaction!.csrfToken;
    expect((await rpcError(rpc().login({ interactionId, csrfToken, email: "ada@security.test", password: PASSWORD, remoteAddress: "192.0.2.202" }))).code).toBe(
      Code.NotFound,
    );
    const consent = rpc().decideConsent({ interactionId, sessionId, csrfToken, decision: ConsentDecision.ALLOW, parameters: interaction!.parameters });
    expect((await rpcError(consent)).code).toBe(Code.NotFound);
  });
});

/**
 * Holds a row lock in a transaction of its own while `during` runs, so that
 * the requests fired there queue up behind it in a known order; `waiting(n)`
 * waits until n sessions of the test database wait for a lock. Then commits.
 */
async function holdingRow(lockSql: string, values: unknown[], during: (waiting: (n: number) => Promise<void>) => Promise<void>) {
  const holder = new pg.Client({ connectionString: db.url });
  const probe = new pg.Client({ connectionString: db.url });
  await Promise.all([holder.connect(), probe.connect()]);
  try {
    await holder.query("begin");
    expect((await holder.query(lockSql, values)).rowCount).toBe(1);
    await during(async (n) => {
      await waitFor(
        async () => {
          const { rows } = await probe.query(
            `select count(*)::int as "n" from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          );
          return (rows[0] as { n: number }).n >= n;
        },
        10_000,
        `${n} sessions waiting for a lock`,
      );
    });
  } finally {
    await holder.query("rollback").catch(() => undefined);
    await Promise.all([holder.end(), probe.end()]);
  }
}

const settle = <T>(p: Promise<T>) => p.then((value) => ({ value }), (error: unknown) => ({ error: ConnectError.from(error).message }));

describe("revocations racing the issue of tokens under the same grant (ordered by a held row lock)", () => {
  const revokeGrant = () => settle(rpc().revokeGrant({ organisationId: orgId, clientId: app.id }));

  it("RevokeGrant while a refresh is rotating: no deadlock (server error), and what the refresh issued is revoked too", async () => {
    const first = await tokensFor(app);
    let refreshed!: Promise<Answer>;
    let revoked!: ReturnType<typeof revokeGrant>;
    await holdingRow(`select 1 from "auth"."refresh_token" where "hash" = $1 for update`, [tokenHashOf(first.refresh_token)], async (waiting) => {
      refreshed = token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(app) });
      await waiting(1);
      revoked = revokeGrant();
      await waiting(2);
    });
    const [r, g] = await Promise.all([refreshed, revoked]);
    expect(g).toEqual({ value: expect.anything() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await bearer(r.body.access_token!)).toBe("invalid_token");
    expect((await token({ grant_type: "refresh_token", refresh_token: r.body.refresh_token!, ...post(app) })).status).toBe(400);
  });

  it("RevokeGrant while a code is being exchanged: no deadlock (server error), and what the exchange issued is revoked too", async () => {
    const { code, verifier } = await consentedCode(app);
    let exchanged!: Promise<Answer>;
    let revoked!: ReturnType<typeof revokeGrant>;
    await holdingRow(`select 1 from "auth"."authorization_code" where "hash" = $1 for update`, [tokenHashOf(code)], async (waiting) => {
      exchanged = token({ grant_type: "authorization_code", code, redirect_uri: REDIRECT, code_verifier: verifier, ...post(app) });
      await waiting(1);
      revoked = revokeGrant();
      await waiting(2);
    });
    const [x, g] = await Promise.all([exchanged, revoked]);
    expect(g).toEqual({ value: expect.anything() });
    expect(x.status, JSON.stringify(x.body)).toBe(200);
    expect(await bearer(x.body.access_token!)).toBe("invalid_token");
    expect((await token({ grant_type: "refresh_token", refresh_token: x.body.refresh_token!, ...post(app) })).status).toBe(400);
  });

  it("RFC 7009 revocation of a refresh token while it rotates: the family's new tokens are revoked too", async () => {
    const first = await tokensFor(app);
    const creds = { clientId: app.id, clientSecret: app.secret, method: "client_secret_post" };
    let refreshed!: Promise<Answer>;
    let revoked!: ReturnType<typeof settle>;
    await holdingRow(`select 1 from "auth"."refresh_token" where "hash" = $1 for update`, [tokenHashOf(first.refresh_token)], async (waiting) => {
      refreshed = token({ grant_type: "refresh_token", refresh_token: first.refresh_token, ...post(app) });
      await waiting(1);
      revoked = settle(rpc().revokeToken({ client: creds, token: first.refresh_token }));
      await waiting(2);
    });
    const [r, v] = await Promise.all([refreshed, revoked]);
    expect(v).toEqual({ value: expect.anything() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await bearer(r.body.access_token!)).toBe("invalid_token");
    expect((await token({ grant_type: "refresh_token", refresh_token: r.body.refresh_token!, ...post(app) })).status).toBe(400);
    // The grant itself lives on (only the family was revoked): a new code still works.
    expect(await bearer((await tokensFor(app)).access_token)).toBe(orgId);
  });
});
