// The platform of oauth-fast-path-agreement.test.ts: one organisation service
// and two auth services on one database (so one rate_limit table), each behind
// a gateway of its own. The fast side's auth service has the client_credentials
// fast path; the pipeline side's failure limits offer no SQL, which turns the
// fast path off, so every request goes through the pipeline. Both count how
// often the pipeline's client authentication read the limits.
import type { MikroORM } from "@mikro-orm/postgresql";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { AUTH_ENTITIES } from "../../services/auth/auth-app.js";
import { AUTH_SCHEMA } from "../../services/auth/auth-schema.js";
import { authMigrations } from "../../services/auth/migrations/index.js";
import type { FailureLimits } from "../../services/auth/rate-limit/failure-limits.js";
import { createPostgresFailureLimits } from "../../services/auth/rate-limit/postgres-failure-limits.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import type { ServiceApp, ServiceAppDeps } from "../../services/shared/service-app.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { createAuthApp, startPlatform, type Platform, type StartedService } from "./platform.js";

export const TOKEN = "a".repeat(40);
export const CLIENT_LIMIT = 3;
export const ADDRESS_LIMIT = 8;

export interface Side {
  auth: StartedService<ServiceApp & { orm: MikroORM }>;
  url: string;
  /** How many times the pipeline's client authentication read the limits. */
  checks: () => number;
}

export interface Agreement {
  platform: Platform;
  fast: Side;
  pipeline: Side;
  orgId: string;
}

/**
 * The auth app with the PostgreSQL failure limits on an ORM of its own,
 * counting check() calls; `withSql: false` leaves out the limits' SQL, which
 * turns the fast path off.
 */
function authWithLimits(withSql: boolean, counter: { checks: number }) {
  return async (deps: ServiceAppDeps) => {
    const orm = await openServiceDatabase(deps, { schema: AUTH_SCHEMA, entities: AUTH_ENTITIES, migrations: authMigrations });
    const real = createPostgresFailureLimits(orm, AUTH_SCHEMA, deps.config);
    const limits: FailureLimits = {
      consume: (...a) => real.consume(...a),
      refund: (...a) => real.refund(...a),
      check: (...a) => {
        counter.checks++;
        return real.check(...a);
      },
      ...(withSql ? { stored: real.stored } : {}),
    };
    const app = await createAuthApp(deps, { limits });
    return {
      ...app,
      close: async () => {
        await app.close();
        await orm.close();
      },
    };
  };
}

export async function startAgreement(): Promise<Agreement> {
  const limits = { RATE_LIMIT_CLIENT_AUTH_FAILURES: String(CLIENT_LIMIT), RATE_LIMIT_ADDRESS_FAILURES: String(ADDRESS_LIMIT) };
  const fastCounter = { checks: 0 };
  const pipelineCounter = { checks: 0 };
  // The cases' addresses come in X-Forwarded-For, so that each has counters of its own.
  const trustedProxies = ["127.0.0.1"];
  const platform = await startPlatform({
    token: TOKEN,
    auth: { create: authWithLimits(true, fastCounter), config: limits },
    gateway: { trustedProxies },
    member: { organisation: "Agreeing Cards", email: "ada@agree.test", password: "correct horse battery" },
  });
  const organisationUrl = platform.organisation.server.url;
  const pipelineAuth = await platform.startService(
    authWithLimits(false, pipelineCounter),
    platform.configWith({ ORGANISATION_RPC_URL: organisationUrl, ...limits }),
  );
  const pipelineGateway = await platform.addGateway({
    config: { AUTH_RPC_URL: pipelineAuth.server.url },
    serviceUrls: { auth: pipelineAuth.server.url, organisation: organisationUrl },
    trustedProxies,
  });
  return {
    platform,
    fast: { auth: platform.auth, url: platform.base, checks: () => fastCounter.checks },
    pipeline: { auth: pipelineAuth, url: pipelineGateway.base, checks: () => pipelineCounter.checks },
    orgId: platform.organisationId,
  };
}

export interface Registered {
  id: string;
  secret: string;
}

export type RegisterOptions = { scopes?: string[]; owned?: boolean; public?: boolean; grantTypes?: string[] };

export async function register(a: Agreement, name: string, extra: RegisterOptions = {}): Promise<Registered> {
  const res = await a.fast.auth.client(AuthService).createClient({
    name,
    redirectUris: ["https://app.agree.test/cb"],
    scopes: extra.scopes ?? [],
    public: extra.public ?? false,
    ownerOrganisationId: extra.owned === false || extra.public ? "" : a.orgId,
    grantTypes: extra.grantTypes ?? [],
  });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

export interface Request {
  params: Record<string, string>;
  headers?: Record<string, string>;
}

/** What a client sees of an answer, with the token's value replaced by its shape. */
export interface Seen {
  status: number;
  error?: unknown;
  error_description?: unknown;
  wwwAuthenticate: string | null;
  retryAfter: boolean;
  cacheControl: string | null;
  token?: { prefix: string; token_type: unknown; expires_in: unknown; scope: unknown; refresh_token: boolean; stored: unknown };
}

export async function send(s: Side, request: Request, address: string): Promise<Seen> {
  const res = await fetch(`${s.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address, ...request.headers },
    body: new URLSearchParams(request.params).toString(),
  });
  const body = (await res.json()) as Record<string, unknown>;
  const seen: Seen = {
    status: res.status,
    error: body.error,
    error_description: body.error_description,
    wwwAuthenticate: res.headers.get("www-authenticate"),
    retryAfter: Number(res.headers.get("retry-after")) > 0,
    cacheControl: res.headers.get("cache-control"),
  };
  if (typeof body.access_token === "string") {
    const [row] = await s.auth.app.orm.em
      .fork()
      .execute(`select "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "audience" from "auth"."access_token" where "hash" = ?`, [
        tokenHash(body.access_token),
      ]);
    seen.token = {
      prefix: body.access_token.slice(0, 4),
      token_type: body.token_type,
      expires_in: body.expires_in,
      scope: body.scope,
      refresh_token: "refresh_token" in body,
      stored: row,
    };
  }
  return seen;
}
