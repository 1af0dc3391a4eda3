// The client_credentials fast path (services/auth/tokens/client-credentials-fast-path.ts)
// and the token endpoint's pipeline agree on every rule: a table of requests
// (client, secret, grant type, scope, authentication method, failure limits),
// each sent once to a gateway whose auth service has the fast path and once
// to a gateway whose auth service has none (its failure limits offer no SQL,
// so every request goes through the pipeline). Both auth services share one
// database, so one rate_limit table: a case's counters are the same for both.
// Each pair of answers must be the same to a client (status, error,
// error_description, WWW-Authenticate, Retry-After, the token's shape and
// scope), and a success on the fast side must have been the fast path's (the
// pipeline's client authentication, which reads the limits, never ran).
// And grant_type is judged by the auth service alone: the gateway forwards it.
import type { AddressInfo } from "node:net";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildGateway } from "../gateway/app.js";
import { createServiceClients } from "../gateway/clients.js";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { AUTH_ENTITIES, createAuthApp } from "../services/auth/auth-app.js";
import { AUTH_SCHEMA } from "../services/auth/auth-schema.js";
import { authMigrations } from "../services/auth/migrations/index.js";
import type { FailureLimits } from "../services/auth/rate-limit/failure-limits.js";
import { createPostgresFailureLimits } from "../services/auth/rate-limit/postgres-failure-limits.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import type { Config } from "../services/shared/config.js";
import { openServiceDatabase } from "../services/shared/database.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import { createLogger } from "../services/shared/logger.js";
import type { ServiceApp, ServiceAppDeps } from "../services/shared/service-app.js";
import { tokenHash } from "../services/shared/token-hash.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { freePort } from "./support/processes.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";

const TOKEN = "a".repeat(40);
const CLIENT_LIMIT = 3;
const ADDRESS_LIMIT = 8;

interface Side {
  auth: StartedService<ServiceApp & { orm: MikroORM }>;
  gateway: FastifyInstance;
  url: string;
  /** How many times the pipeline's client authentication read the limits. */
  checks: () => number;
}

let db: TestDatabase;
let bus: EventBus;
let organisation: StartedService<ServiceApp>;
let fast: Side;
let pipeline: Side;
let orgId: string;

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

async function side(config: Config, gatewayConfig: (authUrl: string) => Config, withSql: boolean): Promise<Side> {
  const counter = { checks: 0 };
  const auth = await startService(authWithLimits(withSql, counter), { config, db, bus });
  const gateway = await buildGateway({
    clients: createServiceClients(gatewayConfig(auth.server.url)),
    serviceUrls: { auth: auth.server.url, organisation: organisation.server.url },
    logger: createLogger("fast-path-agreement", config.LOG_LEVEL),
    // The cases' addresses come in X-Forwarded-For, so that each has counters of its own.
    trustedProxies: ["127.0.0.1"],
  });
  await gateway.listen({ port: 0, host: "127.0.0.1" });
  return { auth, gateway, url: `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`, checks: () => counter.checks };
}

beforeAll(async () => {
  db = await createTestDatabase();
  const base = testConfig({ INTERNAL_RPC_TOKEN: TOKEN });
  bus = await openTestBus(base);
  const configWith = (overrides: Record<string, string>) =>
    testConfig({ INTERNAL_RPC_TOKEN: TOKEN, NATS_STREAM: base.NATS_STREAM, NATS_SUBJECT_PREFIX: base.NATS_SUBJECT_PREFIX, ...overrides });
  organisation = await startService(createOrganisationApp, { config: configWith({}), db, bus });
  const authConfig = configWith({
    ORGANISATION_RPC_URL: organisation.server.url,
    RATE_LIMIT_CLIENT_AUTH_FAILURES: String(CLIENT_LIMIT),
    RATE_LIMIT_ADDRESS_FAILURES: String(ADDRESS_LIMIT),
  });
  const gatewayConfig = (authUrl: string) => configWith({ ORGANISATION_RPC_URL: organisation.server.url, AUTH_RPC_URL: authUrl });
  fast = await side(authConfig, gatewayConfig, true);
  pipeline = await side(authConfig, gatewayConfig, false);
  const created = await organisation
    .client(OrganisationService)
    .createOrganisation({ name: "Agreeing Cards", ownerEmail: "ada@agree.test", ownerPassword: "correct horse battery" });
  orgId = created.organisation!.id;
});

afterAll(async () => {
  for (const s of [fast, pipeline]) {
    await s?.gateway.close();
    await s?.auth.stop();
  }
  await organisation?.stop();
  await bus?.close();
  await db?.drop();
});

interface Registered {
  id: string;
  secret: string;
}

async function register(
  name: string,
  extra: { scopes?: string[]; owned?: boolean; public?: boolean; grantTypes?: string[] } = {},
): Promise<Registered> {
  const res = await fast.auth.client(AuthService).createClient({
    name,
    redirectUris: ["https://app.agree.test/cb"],
    scopes: extra.scopes ?? [],
    public: extra.public ?? false,
    ownerOrganisationId: extra.owned === false || extra.public ? "" : orgId,
    grantTypes: extra.grantTypes ?? [],
  });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

interface Request {
  params: Record<string, string>;
  headers?: Record<string, string>;
}

/** What a client sees of an answer, with the token's value replaced by its shape. */
interface Seen {
  status: number;
  error?: unknown;
  error_description?: unknown;
  wwwAuthenticate: string | null;
  retryAfter: boolean;
  cacheControl: string | null;
  token?: { prefix: string; token_type: unknown; expires_in: unknown; scope: unknown; refresh_token: boolean; stored: unknown };
}

async function send(s: Side, request: Request, address: string): Promise<Seen> {
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
      .execute(`select "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes" from "auth"."access_token" where "hash" = ?`, [
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

const basic = (id: string, secret: string) => ({
  authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`,
});
const cc = (c: Registered, extra: Record<string, string> = {}): Request => ({
  params: { grant_type: "client_credentials", client_id: c.id, client_secret: c.secret, ...extra },
});

interface Case {
  name: string;
  /** The request, given this case's clients (registered once for both sides). */
  request: (c: Record<string, Registered>) => Request;
  clients?: Record<string, Parameters<typeof register>[1]>;
  /** Run before the pair is sent, from the case's address (counters to push over a limit). */
  before?: (c: Record<string, Registered>, address: string) => Promise<void>;
  expected: { status: number; error?: string; scope?: string };
}

const SCOPED = { scopes: ["organisation:read", "webhooks:read"] };

const CASES: Case[] = [
  { name: "unknown client", request: () => cc({ id: "bc_nobody", secret: "bcs_nothing" }), expected: { status: 401, error: "invalid_client" } },
  { name: "wrong secret", request: ({ a }) => cc({ ...a!, secret: "bcs_wrong" }), expected: { status: 401, error: "invalid_client" } },
  { name: "right secret", request: ({ a }) => cc(a!), expected: { status: 200, scope: "organisation:read webhooks:read" } },
  {
    name: "public client (client_id only)",
    clients: { a: { public: true } },
    request: ({ a }) => ({ params: { grant_type: "client_credentials", client_id: a!.id } }),
    expected: { status: 400, error: "unauthorized_client" },
  },
  {
    name: "public client with a secret",
    clients: { a: { public: true } },
    request: ({ a }) => cc({ ...a!, secret: "bcs_made_up" }),
    expected: { status: 401, error: "invalid_client" },
  },
  {
    name: "client not allowed client_credentials",
    clients: { a: { grantTypes: ["authorization_code", "refresh_token"] } },
    request: ({ a }) => cc(a!),
    expected: { status: 400, error: "unauthorized_client" },
  },
  {
    name: "confidential client owned by no organisation",
    clients: { a: { owned: false } },
    request: ({ a }) => cc(a!),
    expected: { status: 400, error: "unauthorized_client" },
  },
  { name: "scope omitted", request: ({ a }) => cc(a!), expected: { status: 200, scope: "organisation:read webhooks:read" } },
  { name: "scope allowed", request: ({ a }) => cc(a!, { scope: "webhooks:read" }), expected: { status: 200, scope: "webhooks:read" } },
  {
    name: "scopes allowed, in another order",
    request: ({ a }) => cc(a!, { scope: "webhooks:read organisation:read" }),
    expected: { status: 200, scope: "organisation:read webhooks:read" },
  },
  { name: "scope not allowed", request: ({ a }) => cc(a!, { scope: "organisation:read contacts:read" }), expected: { status: 400, error: "invalid_scope" } },
  { name: "scope unknown", request: ({ a }) => cc(a!, { scope: "organisation:read admin" }), expected: { status: 400, error: "invalid_scope" } },
  {
    name: "scope duplicated",
    request: ({ a }) => cc(a!, { scope: "organisation:read organisation:read" }),
    expected: { status: 200, scope: "organisation:read" },
  },
  { name: "scope with two spaces", request: ({ a }) => cc(a!, { scope: "organisation:read  webhooks:read" }), expected: { status: 400, error: "invalid_request" } },
  {
    name: "right secret, Basic",
    request: ({ a }) => ({ params: { grant_type: "client_credentials" }, headers: basic(a!.id, a!.secret) }),
    expected: { status: 200, scope: "organisation:read webhooks:read" },
  },
  {
    name: "wrong secret, Basic",
    request: ({ a }) => ({ params: { grant_type: "client_credentials" }, headers: basic(a!.id, "bcs_wrong") }),
    expected: { status: 401, error: "invalid_client" },
  },
  {
    name: "Basic and client_secret at once",
    request: ({ a }) => ({ params: { grant_type: "client_credentials", client_secret: a!.secret }, headers: basic(a!.id, a!.secret) }),
    expected: { status: 400, error: "invalid_request" },
  },
  { name: "no grant_type", request: ({ a }) => ({ params: { client_id: a!.id, client_secret: a!.secret } }), expected: { status: 400, error: "invalid_request" } },
  {
    name: "unknown grant_type",
    request: ({ a }) => ({ params: { grant_type: "password", client_id: a!.id, client_secret: a!.secret } }),
    expected: { status: 400, error: "unsupported_grant_type" },
  },
  {
    name: "no client at all",
    request: () => ({ params: { grant_type: "client_credentials" } }),
    expected: { status: 401, error: "invalid_client" },
  },
  {
    name: "wrong secret, client over its failure limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc({ ...a!, secret: "bcs_guess" }),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, client over its failure limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, address over its failure limit",
    before: async (_c, address) => {
      for (let i = 0; i < ADDRESS_LIMIT; i++) await send(pipeline, cc({ id: `bc_nobody${i}`, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, another client over its limit from the same address",
    clients: { a: SCOPED, b: SCOPED },
    before: async ({ b }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(pipeline, cc({ ...b!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 200, scope: "organisation:read webhooks:read" },
  },
  {
    name: "right secret, failures below the limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT - 2; i++) await send(pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 200, scope: "organisation:read webhooks:read" },
  },
];

describe("the fast path and the pipeline answer alike", () => {
  CASES.forEach((c, i) => {
    it(c.name, async () => {
      const clients: Record<string, Registered> = {};
      for (const [key, options] of Object.entries(c.clients ?? { a: SCOPED })) clients[key] = await register(`${c.name} ${key}`, options);
      // Addresses of their own (TEST-NET-3): no case's counters reach another's.
      const address = `203.0.113.${i + 1}`;
      await c.before?.(clients, address);
      const request = c.request(clients);

      const fastChecks = fast.checks();
      const viaFast = await send(fast, request, address);
      const fastPathAnswered = fast.checks() === fastChecks;
      const pipelineChecks = pipeline.checks();
      const viaPipeline = await send(pipeline, request, address);

      expect(viaFast.status, JSON.stringify(viaFast)).toBe(c.expected.status);
      if (c.expected.error) expect(viaFast.error).toBe(c.expected.error);
      if (c.expected.scope) expect(viaFast.token?.scope).toBe(c.expected.scope);
      expect(viaFast.cacheControl).toBe("no-store");
      expect(viaFast).toEqual(viaPipeline);
      if (viaFast.status === 200) {
        // The success was the fast path's; the other side's, the pipeline's.
        expect(fastPathAnswered).toBe(true);
        expect(pipeline.checks()).toBeGreaterThan(pipelineChecks);
        expect(viaFast.token).toMatchObject({
          prefix: "bca_",
          token_type: "Bearer",
          refresh_token: false,
          stored: { client_id: clients.a!.id, organisation_id: orgId, member_id: null, grant_id: null, family: null },
        });
      }
    });
  });
});

describe("grant_type is the auth service's to judge", () => {
  it("the gateway forwards it: with its auth service unreachable, an unknown grant_type is 503, not judged there", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const config = testConfig({ INTERNAL_RPC_TOKEN: TOKEN, ORGANISATION_RPC_URL: organisation.server.url, AUTH_RPC_URL: closed });
    const lonely = await buildGateway({
      clients: createServiceClients(config),
      serviceUrls: { auth: closed, organisation: organisation.server.url },
      logger: createLogger("fast-path-agreement", config.LOG_LEVEL),
    });
    await lonely.listen({ port: 0, host: "127.0.0.1" });
    try {
      const base = `http://127.0.0.1:${(lonely.server.address() as AddressInfo).port}`;
      for (const body of ["grant_type=password&client_id=c&client_secret=s", "grant_type=nope", "client_id=c"]) {
        const res = await fetch(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
        expect(res.status, body).toBe(503);
        expect(((await res.json()) as { error: string }).error).toBe("temporarily_unavailable");
      }
    } finally {
      await lonely.close();
    }
  });
});
