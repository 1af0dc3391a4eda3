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
// pipeline's client authentication, which reads the limits, never ran),
// except for a request naming a resource (RFC 8707), which the fast path
// leaves to the pipeline.
// And grant_type is judged by the auth service alone: the gateway forwards it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADDRESS_LIMIT,
  CLIENT_LIMIT,
  register as registerWith,
  send,
  startAgreement,
  type Agreement,
  type RegisterOptions,
  type Registered,
  type Request,
} from "../support/fast-path-agreement-suite.js";
import { freePort } from "../support/processes.js";

let agreement: Agreement;

beforeAll(async () => {
  agreement = await startAgreement();
});

afterAll(async () => {
  await agreement?.platform.stop();
});

const register = (name: string, extra?: RegisterOptions) => registerWith(agreement, name, extra);

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
  clients?: Record<string, RegisterOptions>;
  /** Run before the pair is sent, from the case's address (counters to push over a limit). */
  before?: (c: Record<string, Registered>, address: string) => Promise<void>;
  expected: { status: number; error?: string; scope?: string; audience?: string };
  /** The fast path leaves this request to the pipeline (it names a resource). */
  pipelineOnly?: boolean;
}

/** The resource identifiers the auth services (one PUBLIC_URL) know. */
const restApi = () => agreement.platform.config.publicUrl;
const mcp = () => `${agreement.platform.config.publicUrl}/mcp`;

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
    name: "resource: the REST API",
    request: ({ a }) => cc(a!, { resource: restApi() }),
    expected: { status: 200, scope: "organisation:read webhooks:read", audience: "api" },
    pipelineOnly: true,
  },
  {
    name: "resource: the MCP endpoint",
    request: ({ a }) => cc(a!, { resource: mcp() }),
    expected: { status: 200, scope: "organisation:read webhooks:read", audience: "mcp" },
    pipelineOnly: true,
  },
  {
    name: "resource unknown",
    request: ({ a }) => cc(a!, { resource: "https://elsewhere.example/mcp" }),
    expected: { status: 400, error: "invalid_target" },
    pipelineOnly: true,
  },
  {
    name: "resource unknown, wrong secret",
    request: ({ a }) => cc({ ...a!, secret: "bcs_wrong" }, { resource: "https://elsewhere.example/mcp" }),
    expected: { status: 401, error: "invalid_client" },
    pipelineOnly: true,
  },
  { name: "no resource: the REST API", request: ({ a }) => cc(a!), expected: { status: 200, audience: "api" } },
  {
    name: "wrong secret, client over its failure limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(agreement.pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc({ ...a!, secret: "bcs_guess" }),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, client over its failure limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(agreement.pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, address over its failure limit",
    before: async (_c, address) => {
      for (let i = 0; i < ADDRESS_LIMIT; i++) await send(agreement.pipeline, cc({ id: `bc_nobody${i}`, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, another client over its limit from the same address",
    clients: { a: SCOPED, b: SCOPED },
    before: async ({ b }, address) => {
      for (let i = 0; i < CLIENT_LIMIT; i++) await send(agreement.pipeline, cc({ ...b!, secret: "bcs_guess" }), address);
    },
    request: ({ a }) => cc(a!),
    expected: { status: 200, scope: "organisation:read webhooks:read" },
  },
  {
    name: "right secret, failures below the limit",
    before: async ({ a }, address) => {
      for (let i = 0; i < CLIENT_LIMIT - 2; i++) await send(agreement.pipeline, cc({ ...a!, secret: "bcs_guess" }), address);
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

      const { fast, pipeline } = agreement;
      const fastChecks = fast.checks();
      const viaFast = await send(fast, request, address);
      const fastPathAnswered = fast.checks() === fastChecks;
      const pipelineChecks = pipeline.checks();
      const viaPipeline = await send(pipeline, request, address);

      expect(viaFast.status, JSON.stringify(viaFast)).toBe(c.expected.status);
      if (c.expected.error) expect(viaFast.error).toBe(c.expected.error);
      if (c.expected.scope) expect(viaFast.token?.scope).toBe(c.expected.scope);
      if (c.expected.audience) expect(viaFast.token?.stored).toMatchObject({ audience: c.expected.audience });
      expect(viaFast.cacheControl).toBe("no-store");
      expect(viaFast).toEqual(viaPipeline);
      if (viaFast.status === 200) {
        // The success was the fast path's; the other side's, the pipeline's.
        expect(fastPathAnswered).toBe(!c.pipelineOnly);
        expect(pipeline.checks()).toBeGreaterThan(pipelineChecks);
        expect(viaFast.token).toMatchObject({
          prefix: "bca_",
          token_type: "Bearer",
          refresh_token: false,
          stored: { client_id: clients.a!.id, organisation_id: agreement.orgId, member_id: null, grant_id: null, family: null },
        });
      }
    });
  });
});

describe("grant_type is the auth service's to judge", () => {
  it("the gateway forwards it: with its auth service unreachable, an unknown grant_type is 503, not judged there", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const organisationUrl = agreement.platform.organisation.server.url;
    const lonely = await agreement.platform.addGateway({ config: { AUTH_RPC_URL: closed }, serviceUrls: { auth: closed, organisation: organisationUrl } });
    try {
      const base = lonely.base;
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
