// The browser flow of the auth service over real RPC, on real PostgreSQL:
// the authorization request's validation (RFC 6749 §4.1.1 / §4.1.2.1,
// RFC 7636, RFC 9700, RFC 9207), login into server-side sessions, CSRF,
// consent, the connected applications, and the failure rate limits, which
// hold across two auth service instances sharing the database.
//
// Grants and codes are the token side's (GrantStore): here the auth service
// runs with a GrantStore that records what the browser flow asks of it, so
// that consent's answers can be checked on their own.
import { create } from "@bufbuild/protobuf";
import { Code, type ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthorizationParametersSchema,
  AuthService,
  ConsentDecision,
  GrantSchema,
  InteractionKind,
  OAuthErrorSchema,
  type AuthorizationParameters,
  type Grant,
} from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { AUTH_SCHEMA, createAuthService } from "../services/auth/auth-service.js";
import { ClientEntity } from "../services/auth/clients/client.entity.js";
import type { CodeRequest, GrantRevocationReason, GrantStore } from "../services/auth/grants/grant-store.js";
import { InteractionEntity } from "../services/auth/interactions/interaction.entity.js";
import { SessionEntity } from "../services/auth/interactions/session.entity.js";
import { authMigrations } from "../services/auth/migrations/index.js";
import { createPostgresFailureLimits } from "../services/auth/rate-limit/postgres-failure-limits.js";
import { RateLimitEntity } from "../services/auth/rate-limit/rate-limit.entity.js";
import { openServiceDatabase, pingDatabase } from "../services/shared/database.js";
import { createRpcClient } from "../services/shared/rpc-client.js";
import { runChecks } from "../services/shared/rpc-server.js";
import type { ServiceApp, ServiceAppDeps } from "../services/shared/service-app.js";
import { tokenHash } from "../services/shared/token-hash.js";
import type { TestDatabase } from "./support/backends.js";
import { createAuthApp, startPlatform, type Platform, type StartedService } from "./support/platform.js";
import { rpcError } from "./support/rpc.js";

const TOKEN = "b".repeat(40);
const ISSUER = "https://auth.bizcard.test";
const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"; // RFC 7636 appendix B
const PASSWORD = "correct horse battery";

/** The GrantStore the browser flow talks to, recording what it was asked. */
const recorded = {
  codes: [] as CodeRequest[],
  revoked: [] as { organisationId: string; clientId: string; reason: GrantRevocationReason }[],
  grants: new Map<string, Grant[]>(),
};
const recordingGrants: GrantStore = {
  async issueAuthorizationCode(request) {
    recorded.codes.push(request);
    return `bcc_test${recorded.codes.length}`;
  },
  async listGrants(organisationId) {
    return recorded.grants.get(organisationId) ?? [];
  },
  async revokeGrant(organisationId, clientId, reason) {
    const list = recorded.grants.get(organisationId) ?? [];
    const kept = list.filter((g) => g.clientId !== clientId);
    recorded.grants.set(organisationId, kept);
    if (kept.length === list.length) return false;
    recorded.revoked.push({ organisationId, clientId, reason });
    return true;
  },
};

/** The auth service as auth-app.ts wires it, with the recording GrantStore. */
async function createAuthAppRecordingGrants(deps: ServiceAppDeps): Promise<ServiceApp> {
  const { config } = deps;
  const orm = await openServiceDatabase(deps, {
    schema: AUTH_SCHEMA,
    entities: [ClientEntity, InteractionEntity, SessionEntity, RateLimitEntity],
    migrations: authMigrations,
  });
  const organisations = createRpcClient(OrganisationService, {
    baseUrl: config.organisationRpcUrl,
    timeoutMs: config.RPC_TIMEOUT_MS,
    internalToken: config.internalToken,
  });
  const service = createAuthService({
    orm,
    organisations,
    allowInsecureRedirects: config.OAUTH_ALLOW_INSECURE_REDIRECTS,
    config,
    issuer: config.publicUrl,
    grants: recordingGrants,
    limits: createPostgresFailureLimits(orm, AUTH_SCHEMA, config),
  });
  return {
    name: "auth",
    routes: (router) => router.service(AuthService, service),
    readiness: () => runChecks({ database: () => pingDatabase(orm) }),
    start: async () => {},
    close: () => orm.close(),
  };
}

let platform: Platform;
let db: TestDatabase;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
/** A second, separate auth service instance (the real app) on the same database. */
let replica: StartedService<ServiceApp>;
let orgId: string;
let otherOrgId: string;
const clients = { web: "", two: "", pub: "", narrow: "" };

beforeAll(async () => {
  platform = await startPlatform({ token: TOKEN, auth: { create: createAuthAppRecordingGrants, config: { PUBLIC_URL: ISSUER } } });
  ({ db, organisation, auth } = platform);
  replica = await platform.startService(createAuthApp, platform.configWith({ ORGANISATION_RPC_URL: organisation.server.url, PUBLIC_URL: ISSUER }));
  const orgs = organisation.client(OrganisationService);
  orgId = (await orgs.createOrganisation({ name: "Acme", ownerEmail: "ada@acme.test", ownerPassword: PASSWORD })).organisation!.id;
  otherOrgId = (await orgs.createOrganisation({ name: "Other", ownerEmail: "bob@other.test", ownerPassword: PASSWORD })).organisation!.id;
  await orgs.createMember({ organisationId: orgId, email: "limit1@acme.test", password: PASSWORD });
  await orgs.createMember({ organisationId: orgId, email: "limit2@acme.test", password: PASSWORD });
  const a = auth.client(AuthService);
  clients.web = (await a.createClient({ name: "Web app", redirectUris: ["https://app.example/cb?tenant=1"] })).client!.clientId;
  clients.two = (await a.createClient({ name: "Two", redirectUris: ["https://two.example/a", "https://two.example/b"] })).client!.clientId;
  clients.pub = (await a.createClient({ name: "CLI", redirectUris: ["http://127.0.0.1:8765/cb"], public: true })).client!.clientId;
  clients.narrow = (await a.createClient({ name: "Narrow", redirectUris: ["https://narrow.example/cb"], scopes: ["organisation:read"] }))
    .client!.clientId;
});

afterAll(async () => {
  await platform?.stop();
});

const rpc = () => auth.client(AuthService);
type Params = Partial<Omit<AuthorizationParameters, "$typeName" | "$unknown">>;
const params = (p: Params) =>
  create(AuthorizationParametersSchema, { responseType: "code", clientId: clients.web, redirectUri: "https://app.example/cb?tenant=1", state: "xyz", ...p });
const oauthError = (err: ConnectError) => err.findDetails(OAuthErrorSchema)[0];

/** An authorization request that must be refused on a page, never redirected. */
async function refusedOnPage(p: Params, description: RegExp, repeatedParameters: string[] = []) {
  const err = await rpcError(rpc().startAuthorization({ parameters: params(p), repeatedParameters }));
  expect(err.code).toBe(Code.InvalidArgument);
  expect(oauthError(err)).toMatchObject({ error: "invalid_request", redirectAllowed: false });
  expect(oauthError(err)?.errorDescription).toMatch(description);
}

/** An authorization request whose error goes back to the client: the redirect's query. */
async function redirected(p: Params, repeatedParameters: string[] = []): Promise<URL> {
  const res = await rpc().startAuthorization({ parameters: params(p), repeatedParameters });
  expect(res.interactionId).toBe("");
  return new URL(res.redirectTo);
}

async function login(interactionId: string, email = "ada@acme.test", password = PASSWORD, remoteAddress = "192.0.2.1", via = auth) {
  const client = via.client(AuthService);
  const { interaction } = await client.getInteraction({ interactionId });
  return client.login({ interactionId, csrfToken: interaction!.csrfToken, email, password, remoteAddress });
}

async function startLoggedIn(p: Params = {}) {
  const { interactionId } = await rpc().startAuthorization({ parameters: params(p) });
  const res = await login(interactionId);
  return { interactionId, sessionId: res.sessionId, interaction: res.interaction! };
}

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
    expectError(await redirected({ codeChallenge: `${CHALLENGE.slice(0, 42)}!`, codeChallengeMethod: "S256" }), "invalid_request");
    expectError(await redirected({ codeChallengeMethod: "S256" }), "invalid_request");
    const ok = await rpc().startAuthorization({ parameters: params({ codeChallenge: CHALLENGE, codeChallengeMethod: "S256" }) });
    expect(ok.interactionId).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("a public client without PKCE is refused", async () => {
    const p = { clientId: clients.pub, redirectUri: "http://127.0.0.1:8765/cb" };
    const url = await redirected(p);
    expectError(url, "invalid_request", "http://127.0.0.1:8765/cb");
    expect(url.searchParams.get("error_description")).toMatch(/code_challenge is required/);
    const ok = await rpc().startAuthorization({ parameters: params({ ...p, codeChallenge: CHALLENGE, codeChallengeMethod: "S256" }) });
    expect(ok.interactionId).not.toBe("");
  });

  it("scopes beyond the client's, or unknown, are invalid_scope; none means the client's", async () => {
    const narrow = { clientId: clients.narrow, redirectUri: "https://narrow.example/cb" };
    expectError(await redirected({ ...narrow, scope: "organisation:read contacts:read" }), "invalid_scope", "https://narrow.example/cb");
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
      parameters: params({ scope: "contacts:read organisation:read", codeChallenge: CHALLENGE, codeChallengeMethod: "S256" }),
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
    expect(res.interaction).toMatchObject({ kind: InteractionKind.ACCOUNT, loggedIn: true, memberEmail: "ada@acme.test" });
  });
});

describe("login and sessions", () => {
  it("the right password opens a session bound to the interaction; only the session's hash is stored", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({}) });
    const res = await login(interactionId, "  Ada@ACME.test ");
    expect(res.sessionId).toMatch(/^bcsess_[A-Za-z0-9_-]{43}$/);
    expect(res.interaction).toMatchObject({ id: interactionId, loggedIn: true, memberEmail: "ada@acme.test", organisationId: orgId });
    const ttl = Number(res.expireTime!.seconds) * 1000 - Date.now();
    expect(ttl).toBeGreaterThan(8 * 3600_000 - 10_000);
    const rows = await query(`select id_hash from auth.session where id_hash = $1`, [tokenHash(res.sessionId)]);
    expect(rows).toHaveLength(1);
    expect(await query(`select 1 from auth.session where id_hash = $1`, [res.sessionId])).toHaveLength(0);
    const { session } = await rpc().getSession({ sessionId: res.sessionId });
    expect(session).toMatchObject({ organisationId: orgId, memberEmail: "ada@acme.test" });
    expect(session?.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("a wrong password and an unknown email fail alike", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({}) });
    for (const [email, password] of [
      ["ada@acme.test", "wrong password!"],
      ["nobody@acme.test", PASSWORD],
    ]) {
      const err = await rpcError(login(interactionId, email, password, "198.51.100.7"));
      expect(err.code).toBe(Code.PermissionDenied);
      expect(oauthError(err)).toMatchObject({ error: "invalid_credentials", errorDescription: "email or password is wrong" });
    }
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction?.loggedIn).toBe(false);
  });

  it("a wrong or missing CSRF token is refused before the credentials are looked at", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({}) });
    const other = await rpc().startAuthorization({ parameters: params({}) });
    const { interaction: otherInteraction } = await rpc().getInteraction({ interactionId: other.interactionId });
    for (const csrfToken of ["", "x", otherInteraction!.csrfToken]) {
      const err = await rpcError(rpc().login({ interactionId, csrfToken, email: "ada@acme.test", password: PASSWORD, remoteAddress: "192.0.2.1" }));
      expect(err.code).toBe(Code.PermissionDenied);
      expect(oauthError(err)?.error).toBe("invalid_csrf_token");
    }
  });

  it("a live session binds the interactions it views, and a new request at once", async () => {
    const { sessionId } = await startLoggedIn();
    const fresh = await rpc().startAuthorization({ parameters: params({}) });
    expect((await rpc().getInteraction({ interactionId: fresh.interactionId })).interaction?.loggedIn).toBe(false);
    const seen = await rpc().getInteraction({ interactionId: fresh.interactionId, sessionId });
    expect(seen.interaction).toMatchObject({ loggedIn: true, memberEmail: "ada@acme.test", organisationId: orgId });
    const bound = await rpc().startAuthorization({ parameters: params({}), sessionId });
    const { interaction } = await rpc().getInteraction({ interactionId: bound.interactionId, sessionId });
    const res = await rpc().decideConsent({
      interactionId: bound.interactionId,
      sessionId,
      csrfToken: interaction!.csrfToken,
      decision: ConsentDecision.ALLOW,
      parameters: interaction!.parameters,
    });
    expect(new URL(res.redirectTo).searchParams.get("code")).toMatch(/^bcc_/);
  });

  it("logout needs the session's CSRF token and ends the session for real", async () => {
    const { sessionId } = await startLoggedIn();
    const { session } = await rpc().getSession({ sessionId });
    const err = await rpcError(rpc().logout({ sessionId, csrfToken: "wrong" }));
    expect(oauthError(err)?.error).toBe("invalid_csrf_token");
    await rpc().logout({ sessionId, csrfToken: session!.csrfToken });
    expect((await rpcError(rpc().getSession({ sessionId }))).code).toBe(Code.NotFound);
    // On any replica.
    expect((await rpcError(replica.client(AuthService).getSession({ sessionId }))).code).toBe(Code.NotFound);
    expect(await query(`select 1 from auth.session where id_hash = $1`, [tokenHash(sessionId)])).toHaveLength(0);
    const listed = await rpcError(rpc().listApplications({ sessionId }));
    expect(oauthError(listed)?.error).toBe("login_required");
    // Ending an unknown session succeeds.
    await rpc().logout({ sessionId: "bcsess_unknown", csrfToken: "" });
  });
});

describe("consent", () => {
  const decide = (interactionId: string, sessionId: string, csrfToken: string, decision: ConsentDecision, p: AuthorizationParameters) =>
    rpc().decideConsent({ interactionId, sessionId, csrfToken, decision, parameters: p });

  it("allow: a code for the request as validated, and redirect_uri?code&state&iss keeping the registered query", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn({
      scope: "organisation:read webhooks:write",
      codeChallenge: CHALLENGE,
      codeChallengeMethod: "S256",
    });
    const res = await decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, interaction.parameters!);
    const url = new URL(res.redirectTo);
    expect(`${url.origin}${url.pathname}`).toBe("https://app.example/cb");
    const code = url.searchParams.get("code");
    expect(Object.fromEntries(url.searchParams)).toEqual({ tenant: "1", code, state: "xyz", iss: ISSUER });
    expect(recorded.codes.at(-1)).toEqual({
      clientId: clients.web,
      organisationId: orgId,
      memberId: expect.any(String),
      redirectUri: "https://app.example/cb?tenant=1",
      redirectUriOmitted: false,
      scopes: ["organisation:read", "webhooks:write"],
      codeChallenge: CHALLENGE,
    });
    // Single use.
    const again = await rpcError(decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, interaction.parameters!));
    expect(again.code).toBe(Code.NotFound);
  });

  it("deny: error=access_denied with state and iss, and no code", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn();
    const before = recorded.codes.length;
    const res = await decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.DENY, interaction.parameters!);
    const url = new URL(res.redirectTo);
    expect(url.searchParams.get("error")).toBe("access_denied");
    expect(url.searchParams.get("state")).toBe("xyz");
    expect(url.searchParams.get("iss")).toBe(ISSUER);
    expect(url.searchParams.has("code")).toBe(false);
    expect(recorded.codes.length).toBe(before);
  });

  it("fields that differ from the validated request are refused on a page, and the interaction stays usable", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn({ scope: "organisation:read", codeChallenge: CHALLENGE, codeChallengeMethod: "S256" });
    const p = interaction.parameters!;
    for (const [field, change] of [
      ["redirect_uri", { redirectUri: "https://evil.example/cb" }],
      ["scope", { scope: "organisation:read contacts:read" }],
      ["state", { state: "other" }],
      ["client_id", { clientId: clients.two }],
      ["code_challenge", { codeChallenge: "" }],
      ["code_challenge_method", { codeChallengeMethod: "plain" }],
      ["response_type", { responseType: "token" }],
    ] as const) {
      const err = await rpcError(decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, create(AuthorizationParametersSchema, { ...p, ...change })));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(oauthError(err)).toMatchObject({ error: "invalid_request", redirectAllowed: false });
      expect(oauthError(err)?.errorDescription).toContain(field);
    }
    const ok = await decide(interactionId, sessionId, interaction.csrfToken, ConsentDecision.ALLOW, p);
    expect(new URL(ok.redirectTo).searchParams.get("code")).toMatch(/^bcc_/);
  });

  it("a wrong CSRF token, no session, or another member's session is refused", async () => {
    const { interactionId, sessionId, interaction } = await startLoggedIn();
    const p = interaction.parameters!;
    expect(oauthError(await rpcError(decide(interactionId, sessionId, "wrong", ConsentDecision.ALLOW, p)))?.error).toBe("invalid_csrf_token");
    expect(oauthError(await rpcError(decide(interactionId, "", interaction.csrfToken, ConsentDecision.ALLOW, p)))?.error).toBe("login_required");
    // Bob logged in elsewhere: his session cannot decide on Ada's interaction.
    const bobs = await rpc().startAuthorization({ parameters: params({}) });
    const bob = await login(bobs.interactionId, "bob@other.test");
    expect(bob.interaction?.organisationId).toBe(otherOrgId);
    expect(oauthError(await rpcError(decide(interactionId, bob.sessionId, interaction.csrfToken, ConsentDecision.ALLOW, p)))?.error).toBe("login_required");
    // A member who never logged in for it cannot either (interaction never bound).
    const unbound = await rpc().startAuthorization({ parameters: params({}) });
    const { interaction: u } = await rpc().getInteraction({ interactionId: unbound.interactionId });
    expect(oauthError(await rpcError(decide(unbound.interactionId, sessionId, u!.csrfToken, ConsentDecision.ALLOW, u!.parameters!)))?.error).toBe(
      "login_required",
    );
  });

  it("a JSON consent without an interaction: validated as a new request, session required, errors redirected", async () => {
    const { sessionId } = await startLoggedIn();
    const json = (p: Params, sid = sessionId, decision = ConsentDecision.ALLOW) =>
      rpc().decideConsent({ sessionId: sid, decision, parameters: params({ scope: "organisation:read", ...p }) });
    const ok = new URL((await json({})).redirectTo);
    expect(ok.searchParams.get("code")).toMatch(/^bcc_/);
    expect(ok.searchParams.get("iss")).toBe(ISSUER);
    expect(recorded.codes.at(-1)).toMatchObject({ clientId: clients.web, organisationId: orgId, scopes: ["organisation:read"], codeChallenge: "" });
    const denied = new URL((await json({}, sessionId, ConsentDecision.DENY)).redirectTo);
    expect(denied.searchParams.get("error")).toBe("access_denied");
    const badScope = new URL((await json({ scope: "admin" })).redirectTo);
    expect(badScope.searchParams.get("error")).toBe("invalid_scope");
    expect(badScope.searchParams.get("state")).toBe("xyz");
    expect(oauthError(await rpcError(json({}, "")))?.error).toBe("login_required");
    const page = await rpcError(json({ redirectUri: "https://evil.example/cb" }));
    expect(oauthError(page)).toMatchObject({ error: "invalid_request", redirectAllowed: false });
  });
});

describe("connected applications", () => {
  it("lists the session's organisation's grants; revoking needs the CSRF token and names a granted application", async () => {
    const { sessionId } = await startLoggedIn();
    const { session } = await rpc().getSession({ sessionId });
    recorded.grants.set(orgId, [create(GrantSchema, { organisationId: orgId, clientId: clients.web, clientName: "Web app", scopes: ["organisation:read"] })]);
    const listed = await rpc().listApplications({ sessionId });
    expect(listed.session?.organisationId).toBe(orgId);
    expect(listed.grants.map((g) => g.clientId)).toEqual([clients.web]);
    const badCsrf = await rpcError(rpc().revokeApplication({ sessionId, csrfToken: "nope", clientId: clients.web }));
    expect(oauthError(badCsrf)?.error).toBe("invalid_csrf_token");
    expect((await rpcError(rpc().revokeApplication({ sessionId, csrfToken: session!.csrfToken, clientId: clients.two }))).code).toBe(Code.NotFound);
    await rpc().revokeApplication({ sessionId, csrfToken: session!.csrfToken, clientId: clients.web });
    expect(recorded.revoked.at(-1)).toEqual({ organisationId: orgId, clientId: clients.web, reason: "withdrawn" });
    expect((await rpc().listApplications({ sessionId })).grants).toEqual([]);
    expect(oauthError(await rpcError(rpc().listApplications({ sessionId: "" })))?.error).toBe("login_required");
  });
});

describe("failed logins are rate limited per email and address, across replicas", () => {
  const expectLimited = (err: ConnectError) => {
    expect(err.code).toBe(Code.ResourceExhausted);
    const detail = oauthError(err);
    expect(detail?.error).toBe("invalid_credentials");
    expect(detail?.retryAfterSeconds).toBeGreaterThan(0);
    expect(detail?.retryAfterSeconds).toBeLessThanOrEqual(60);
  };

  it("past 10 failures a minute the next attempt is refused, even with the right password; another address is not", async () => {
    const { interactionId } = await rpc().startAccountLogin({});
    for (let i = 0; i < 10; i++) {
      const err = await rpcError(login(interactionId, "limit1@acme.test", "wrong password!", "203.0.113.1"));
      expect(oauthError(err)?.error).toBe("invalid_credentials");
    }
    expectLimited(await rpcError(login(interactionId, "limit1@acme.test", PASSWORD, "203.0.113.1")));
    expectLimited(await rpcError(login(interactionId, "LIMIT1@acme.test", PASSWORD, "203.0.113.1")));
    expect((await login(interactionId, "limit1@acme.test", PASSWORD, "203.0.113.2")).sessionId).toMatch(/^bcsess_/);
  });

  it("failures spread over two auth service instances count together", async () => {
    const { interactionId } = await rpc().startAccountLogin({});
    for (let i = 0; i < 10; i++) {
      const via = i % 2 === 0 ? auth : replica;
      const err = await rpcError(login(interactionId, "limit2@acme.test", "wrong password!", "203.0.113.9", via));
      expect(oauthError(err)?.error).toBe("invalid_credentials");
    }
    expectLimited(await rpcError(login(interactionId, "limit2@acme.test", PASSWORD, "203.0.113.9", auth)));
    expectLimited(await rpcError(login(interactionId, "limit2@acme.test", PASSWORD, "203.0.113.9", replica)));
  });
});

describe("FailureLimits on PostgreSQL", () => {
  it("client authentication per client and address, and every failure per address", async () => {
    const orm = await openServiceDatabase(
      { databaseUrl: db.url, databasePoolMax: db.poolMax, logger: (await import("../services/shared/logger.js")).createLogger("test", "silent"), config: { MIGRATE_ON_START: false } },
      { schema: AUTH_SCHEMA, entities: [RateLimitEntity], migrations: authMigrations },
    );
    try {
      const limits = createPostgresFailureLimits(orm, AUTH_SCHEMA, {
        RATE_LIMIT_LOGIN_FAILURES: 100,
        RATE_LIMIT_CLIENT_AUTH_FAILURES: 3,
        RATE_LIMIT_ADDRESS_FAILURES: 5,
      });
      // Each attempt takes its point first; a right credential gives it back.
      await limits.consume("client", "bc_limited", "192.0.2.50");
      await limits.refund("client", "bc_limited", "192.0.2.50");
      for (let i = 0; i < 3; i++) await limits.consume("client", "bc_limited", "192.0.2.50");
      // At the limit: a read refuses now (the next consume would too).
      expect(oauthError(await rpcError(limits.check("client", "bc_limited", "192.0.2.50")))?.error).toBe("invalid_client");
      await limits.check("client", "bc_limited", "192.0.2.51");
      const err = await rpcError(limits.consume("client", "bc_limited", "192.0.2.50"));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(oauthError(err)).toMatchObject({ error: "invalid_client" });
      expect(oauthError(err)?.retryAfterSeconds).toBeGreaterThan(0);
      await limits.consume("client", "bc_limited", "192.0.2.51");
      // The address has 5 points taken (.50's four attempts of bc_limited and one other).
      await limits.consume("login", "x@acme.test", "192.0.2.50");
      const byAddress = await rpcError(limits.consume("login", "fresh@acme.test", "192.0.2.50"));
      expect(oauthError(byAddress)).toMatchObject({ error: "invalid_credentials" });
    } finally {
      await orm.close();
    }
    // Hashed keys: no email or address in the table. (After the close: embedded PGlite serves four connections.)
    const keys = (await query(`select key from auth.rate_limit`, [])) as { key: string }[];
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.filter((k) => /192\.0\.2|@/.test(k.key))).toEqual([]);
  });
});

async function query(sql: string, values: unknown[]): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query(sql, values)).rows;
  } finally {
    await c.end();
  }
}
