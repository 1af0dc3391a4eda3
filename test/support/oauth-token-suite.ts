// The token endpoint's suites: POST /oauth/token over real HTTP through the
// gateway, in front of the real organisation, auth and webhook services (the
// platform fixture), with failure limits replaced by a recording seam, two
// organisations and four registered clients; and the helpers that check
// what a client sees. Each suite file calls useOAuthTokenSuite() once.
import { createHash, randomBytes } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService, OAuthErrorSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import {
  GrantRevokedSchema,
  TokenRevokedSchema,
  type GrantRevoked,
  type TokenRevoked,
} from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { GrantStore } from "../../services/auth/grants/grant-store.js";
import { rateLimited } from "../../services/auth/oauth-errors.js";
import type { FailureLimits } from "../../services/auth/rate-limit/failure-limits.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import {
  createAuthApp,
  createWebhookApp,
  startPlatform,
  type AuthApp,
  type Platform,
  type StartedService,
} from "./platform.js";
import { rpcError } from "./rpc.js";

export const TOKEN = "t".repeat(40);
export const REDIRECT = "https://app.example.test/callback";
export const PUBLIC_REDIRECT = "http://127.0.0.1:8765/cb";
export const ALL = "organisation:read webhooks:read webhooks:write contacts:read";

/**
 * The seam a2 fills with PostgreSQL counters; here a plain list of the
 * failures counted, and a set of clients over their limit, so that these
 * tests do not depend on it.
 */
export const failures: string[] = [];
export const limitedClients = new Set(["bc_limited"]);
export const limits: FailureLimits = {
  counterKeys: (kind, subject) => [`${kind}:${subject}`],
  // Each key read back as a counter of its own, so that overLimit() sees which subject it is.
  countersSql: (keys) =>
    `(select coalesce(json_agg(json_build_object('key', k."key", 'points', 0, 'expire', null)), '[]') from ${keys} k)`,
  overLimit: (kind, counters) =>
    kind === "client" && counters.some((c) => limitedClients.has(c.key.slice("client:".length)))
      ? rateLimited("invalid_client", 7)
      : undefined,
  consume: async (kind, subject) => {
    failures.push(`${kind}:${subject}`);
    if (kind === "client" && limitedClients.has(subject)) throw rateLimited("invalid_client", 7);
  },
  refund: async (kind, subject) => {
    failures.splice(failures.lastIndexOf(`${kind}:${subject}`), 1);
  },
};

export let platform: Platform;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<AuthApp>;
export let webhook: StartedService<ServiceApp>;
export let url: string;
export let grants: GrantStore;
export let orgA: string;
export let orgB: string;
export let memberA: string;
export let memberB: string;
export const grantEvents: GrantRevoked[] = [];
export const tokenEvents: TokenRevoked[] = [];

export interface Registered {
  id: string;
  secret: string;
}
export let confidential: Registered;
export let other: Registered;
export let publicClient: Registered;
export let owned: Registered;

export const rpc = () => auth.client(AuthService);

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export async function codeFor(
  client: Registered,
  options: {
    challenge?: string;
    redirectUri?: string;
    scopes?: string[];
    organisationId?: string;
    memberId?: string;
  } = {},
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

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export async function token(
  params: Record<string, string>,
  options: { basic?: Registered; json?: boolean } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {
    "content-type": options.json ? "application/json" : "application/x-www-form-urlencoded",
  };
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
export const post = (client: Registered) => ({ client_id: client.id, client_secret: client.secret });

export function expectTokens(a: Answer, options: { refresh: boolean; scope?: string }): void {
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(a.headers.get("cache-control")).toBe("no-store");
  expect(a.body.access_token).toMatch(/^bca_[A-Za-z0-9_-]{43}$/);
  expect(a.body.token_type).toBe("Bearer");
  expect(a.body.expires_in).toBe(3600);
  expect(a.body.scope).toBe(options.scope ?? ALL);
  if (options.refresh) expect(a.body.refresh_token).toMatch(/^bcr_[A-Za-z0-9_-]{43}$/);
  else expect(a.body).not.toHaveProperty("refresh_token");
}

export function expectOAuthError(a: Answer, status: number, error: string, description?: RegExp): void {
  expect(a.status, JSON.stringify(a.body)).toBe(status);
  expect(a.body.error).toBe(error);
  expect(typeof a.body.error_description).toBe("string");
  if (description) expect(a.body.error_description).toMatch(description);
  expect(a.headers.get("cache-control")).toBe("no-store");
  if (status === 401) expect(a.headers.get("www-authenticate")).toMatch(/^Basic /);
}

/** The bearer check the gateway makes: the organisation, or the OAuth error it fails with. */
export async function bearer(accessToken: string): Promise<string> {
  try {
    const res = await rpc().authenticateAccessToken({ accessToken });
    return res.organisationId;
  } catch (err) {
    const e = await rpcError(Promise.reject(err));
    expect(e.code).toBe(Code.PermissionDenied);
    return e.findDetails(OAuthErrorSchema)[0]?.error ?? "no detail";
  }
}

export async function exchangeCode(
  client: Registered,
  options: { scopes?: string[]; organisationId?: string; memberId?: string } = {},
) {
  const { verifier, challenge } = pkce();
  const code = await codeFor(client, { challenge, ...options });
  const a = await token({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    ...post(client),
  });
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  return a.body as { access_token: string; refresh_token: string; scope: string };
}

export async function grantOf(organisationId: string, clientId: string) {
  const { grants: list } = await rpc().listGrants({ organisationId });
  return list.find((g) => g.clientId === clientId);
}

/** Registers the file's platform: started before its tests, stopped after. */
export function useOAuthTokenSuite(): void {
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
    owned = await register({
      name: "A's script",
      ownerOrganisationId: orgA,
      scopes: ["organisation:read", "contacts:read"],
    });
  });

  afterAll(async () => {
    await platform?.stop();
  });
}
