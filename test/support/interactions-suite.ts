// The browser flow of the auth service over real RPC, on real PostgreSQL, as
// its suites drive it. Grants and codes are the token side's (GrantStore):
// here the auth service runs with a GrantStore that records what the browser
// flow asks of it, so that consent's answers can be checked on their own; a
// second, separate auth service (the real app) shares the database. Each
// suite file calls useInteractionsSuite() once.
import { create } from "@bufbuild/protobuf";
import { Code, type ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import {
  AuthorizationParametersSchema,
  AuthService,
  OAuthErrorSchema,
  type AuthorizationParameters,
  type Grant,
} from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { AUTH_SCHEMA, createAuthService } from "../../services/auth/auth-service.js";
import { ClientEntity } from "../../services/auth/clients/client.entity.js";
import type { CodeRequest, GrantRevocationReason, GrantStore } from "../../services/auth/grants/grant-store.js";
import { InteractionEntity } from "../../services/auth/interactions/interaction.entity.js";
import { SessionEntity } from "../../services/auth/interactions/session.entity.js";
import { authMigrations } from "../../services/auth/migrations/index.js";
import { createPostgresFailureLimits } from "../../services/auth/rate-limit/postgres-failure-limits.js";
import { RateLimitEntity } from "../../services/auth/rate-limit/rate-limit.entity.js";
import { openServiceDatabase, pingDatabase } from "../../services/shared/database.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { runChecks } from "../../services/shared/rpc/health.js";
import type { ServiceApp, ServiceAppDeps } from "../../services/shared/service-app.js";
import type { TestDatabase } from "./backends.js";
import { createAuthApp, startPlatform, type Platform, type StartedService } from "./platform.js";
import { rpcError } from "./rpc.js";

export const TOKEN = "b".repeat(40);
export const ISSUER = "https://auth.bizcard.test";
export const CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"; // RFC 7636 appendix B
export const PASSWORD = "correct horse battery";

/** The GrantStore the browser flow talks to, recording what it was asked. */
export const recorded = {
  codes: [] as CodeRequest[],
  revoked: [] as { organisationId: string; clientId: string; reason: GrantRevocationReason }[],
  grants: new Map<string, Grant[]>(),
};
export const recordingGrants: GrantStore = {
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
export async function createAuthAppRecordingGrants(deps: ServiceAppDeps): Promise<ServiceApp> {
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

export let platform: Platform;
export let db: TestDatabase;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<ServiceApp>;
/** A second, separate auth service instance (the real app) on the same database. */
export let replica: StartedService<ServiceApp>;
export let orgId: string;
export let otherOrgId: string;
export const clients = { web: "", two: "", pub: "", narrow: "" };

export const rpc = () => auth.client(AuthService);
export type Params = Partial<Omit<AuthorizationParameters, "$typeName" | "$unknown">>;
export const params = (p: Params) =>
  create(AuthorizationParametersSchema, {
    responseType: "code",
    clientId: clients.web,
    redirectUri: "https://app.example/cb?tenant=1",
    state: "xyz",
    ...p,
  });
export const oauthError = (err: ConnectError) => err.findDetails(OAuthErrorSchema)[0];

/** An authorization request that must be refused on a page, never redirected. */
export async function refusedOnPage(p: Params, description: RegExp, repeatedParameters: string[] = []) {
  const err = await rpcError(rpc().startAuthorization({ parameters: params(p), repeatedParameters }));
  expect(err.code).toBe(Code.InvalidArgument);
  expect(oauthError(err)).toMatchObject({ error: "invalid_request", redirectAllowed: false });
  expect(oauthError(err)?.errorDescription).toMatch(description);
}

/** An authorization request whose error goes back to the client: the redirect's query. */
export async function redirected(p: Params, repeatedParameters: string[] = []): Promise<URL> {
  const res = await rpc().startAuthorization({ parameters: params(p), repeatedParameters });
  expect(res.interactionId).toBe("");
  return new URL(res.redirectTo);
}

export async function login(
  interactionId: string,
  email = "ada@acme.test",
  password = PASSWORD,
  remoteAddress = "192.0.2.1",
  via = auth,
) {
  const client = via.client(AuthService);
  const { interaction } = await client.getInteraction({ interactionId });
  return client.login({ interactionId, csrfToken: interaction!.csrfToken, email, password, remoteAddress });
}

export async function startLoggedIn(p: Params = {}) {
  const { interactionId } = await rpc().startAuthorization({ parameters: params(p) });
  const res = await login(interactionId);
  return { interactionId, sessionId: res.sessionId, interaction: res.interaction! };
}

export async function query(sql: string, values: unknown[]): Promise<unknown[]> {
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    return (await c.query(sql, values)).rows;
  } finally {
    await c.end();
  }
}

/** Registers the file's platform: started before its tests, stopped after. */
export function useInteractionsSuite(): void {
  beforeAll(async () => {
    platform = await startPlatform({
      token: TOKEN,
      auth: { create: createAuthAppRecordingGrants, config: { PUBLIC_URL: ISSUER } },
    });
    ({ db, organisation, auth } = platform);
    replica = await platform.startService(
      createAuthApp,
      platform.configWith({ ORGANISATION_RPC_URL: organisation.server.url, PUBLIC_URL: ISSUER }),
    );
    const orgs = organisation.client(OrganisationService);
    orgId = (await orgs.createOrganisation({ name: "Acme", ownerEmail: "ada@acme.test", ownerPassword: PASSWORD }))
      .organisation!.id;
    otherOrgId = (
      await orgs.createOrganisation({ name: "Other", ownerEmail: "bob@other.test", ownerPassword: PASSWORD })
    ).organisation!.id;
    await orgs.createMember({ organisationId: orgId, email: "limit1@acme.test", password: PASSWORD });
    await orgs.createMember({ organisationId: orgId, email: "limit2@acme.test", password: PASSWORD });
    const a = auth.client(AuthService);
    clients.web = (await a.createClient({ name: "Web app", redirectUris: ["https://app.example/cb?tenant=1"] }))
      .client!.clientId;
    clients.two = (
      await a.createClient({ name: "Two", redirectUris: ["https://two.example/a", "https://two.example/b"] })
    ).client!.clientId;
    clients.pub = (await a.createClient({ name: "CLI", redirectUris: ["http://127.0.0.1:8765/cb"], public: true }))
      .client!.clientId;
    clients.narrow = (
      await a.createClient({
        name: "Narrow",
        redirectUris: ["https://narrow.example/cb"],
        scopes: ["organisation:read"],
      })
    ).client!.clientId;
  });

  afterAll(async () => {
    await platform?.stop();
  });
}
