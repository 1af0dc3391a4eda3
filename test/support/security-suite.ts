// The OAuth server as an attacker or an unlucky client sees it, for its
// suites: the real auth service (PostgreSQL failure limits, the real
// GrantStore) behind the gateway over HTTP (the platform fixture), an
// organisation with a member, a registered client, and the browser flow over
// RPC that issues codes. Each suite file calls useSecuritySuite() once.
import { createHash, randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import {
  AuthorizationParametersSchema,
  AuthService,
  ConsentDecision,
  OAuthErrorSchema,
  type AuthorizationParameters,
} from "../../gen/bizcard/auth/v1/auth_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import type { TestDatabase } from "./backends.js";
import { startPlatform, type AuthApp, type Platform, type StartedService } from "./platform.js";
import { waitFor } from "./processes.js";

export const TOKEN = "s".repeat(40);
export const REDIRECT = "https://app.example.test/callback";
export const PASSWORD = "correct horse battery";
export const ISSUER = "https://auth.security.test";

export let platform: Platform;
export let db: TestDatabase;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<AuthApp>;
export let url: string;
export let orgId: string;

export interface Registered {
  id: string;
  secret: string;
}
export let app: Registered;
export const LOGIN_LIMIT = 3;

export const rpc = () => auth.client(AuthService);
export const oauthError = (err: ConnectError) => err.findDetails(OAuthErrorSchema)[0];

export async function register(name: string, redirectUris = [REDIRECT]): Promise<Registered> {
  const res = await rpc().createClient({ name, redirectUris });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, string>;
}

export async function token(params: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, string> };
}

export const post = (client: Registered) => ({ client_id: client.id, client_secret: client.secret });

export let sessionId: string | undefined;

/** The file's one login session (a live session binds each new interaction at once). */
export async function liveSession(): Promise<string> {
  sessionId ??= await loginOnce();
  return sessionId;
}

export async function loginOnce(): Promise<string> {
  const { interactionId } = await rpc().startAccountLogin({});
  const { interaction } = await rpc().getInteraction({ interactionId });
  const res = await rpc().login({
    interactionId,
    csrfToken: interaction!.csrfToken,
    email: "ada@security.test",
    password: PASSWORD,
    remoteAddress: "192.0.2.200",
  });
  return res.sessionId;
}

/** A code from the browser flow over RPC (authorization request, login, consent), as the gateway drives it. */
export async function consentedCode(
  client: Registered,
  p: Partial<Omit<AuthorizationParameters, "$typeName" | "$unknown">> = {},
) {
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

export async function tokensFor(client: Registered) {
  const { code, verifier } = await consentedCode(client);
  const a = await token({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    ...post(client),
  });
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  return a.body as { access_token: string; refresh_token: string };
}

/** The bearer check the gateway makes: the organisation, or the OAuth error it fails with. */
export async function bearer(accessToken: string): Promise<string> {
  try {
    return (await rpc().authenticateAccessToken({ accessToken })).organisationId;
  } catch (err) {
    return oauthError(ConnectError.from(err))?.error ?? "no detail";
  }
}

export const count = <T>(items: T[], pick: (t: T) => boolean) => items.filter(pick).length;

/**
 * Holds a row lock in a transaction of its own while `during` runs, so that
 * the requests fired there queue up behind it in a known order; `waiting(n)`
 * waits until n sessions of the test database wait for a lock. Then commits.
 */
export async function holdingRow(
  lockSql: string,
  values: unknown[],
  during: (waiting: (n: number) => Promise<void>) => Promise<void>,
) {
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

export const settle = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: ConnectError.from(error).message }),
  );

/** Registers the file's platform: started before its tests, stopped after. */
export function useSecuritySuite(): void {
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
}
