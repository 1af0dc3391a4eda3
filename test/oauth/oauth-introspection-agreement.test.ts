// Introspection's fast path (services/auth/tokens/introspection-fast-path.ts)
// and its pipeline agree (RFC 7662): a table of introspection requests (the
// client, its secret and how it is sent, whose token, in what state, the
// failure limits), each sent once to a gateway whose auth service has the
// fast path and once to one whose auth service has none (its failure limits
// offer no SQL). Both auth services share one database (the tokens, the
// rate_limit table). Each pair of answers must be the same to a client
// (status, body, WWW-Authenticate, Retry-After, Cache-Control), and an
// answer from an authenticated client must have been the fast path's (the
// pipeline's client authentication, which reads the limits, never ran).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GrantStore } from "../../services/auth/grants/grant-store.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { ADDRESS_LIMIT, CLIENT_LIMIT, register, startAgreement, type Agreement, type Registered, type Side } from "../support/fast-path-agreement-suite.js";

let agreement: Agreement;
const clients: Record<"a" | "b" | "publicClient", Registered> = {} as never;
const tokens: Record<"a" | "b" | "refresh" | "rotated" | "expired" | "revoked", string> = {} as never;

interface Request {
  params: Record<string, string>;
  headers?: Record<string, string>;
}

interface Seen {
  status: number;
  body: Record<string, unknown>;
  wwwAuthenticate: string | null;
  retryAfter: boolean;
  cacheControl: string | null;
}

async function call(url: string, path: string, request: Request, address = "198.51.100.1"): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": address, ...request.headers },
    body: new URLSearchParams(request.params).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

async function introspect(side: Side, request: Request, address: string): Promise<Seen> {
  const { status, body, headers } = await call(side.url, "/oauth/introspect", request, address);
  return {
    status,
    body,
    wwwAuthenticate: headers.get("www-authenticate"),
    retryAfter: Number(headers.get("retry-after")) > 0,
    cacheControl: headers.get("cache-control"),
  };
}

const post = (c: Registered, token: string): Request => ({ params: { client_id: c.id, client_secret: c.secret, token } });
const basic = (c: Registered, token: string): Request => ({
  params: { token },
  headers: { authorization: `Basic ${Buffer.from(`${encodeURIComponent(c.id)}:${encodeURIComponent(c.secret)}`).toString("base64")}` },
});

async function clientCredentials(c: Registered): Promise<string> {
  const { status, body } = await call(agreement.fast.url, "/oauth/token", { params: { grant_type: "client_credentials", client_id: c.id, client_secret: c.secret } });
  expect(status, JSON.stringify(body)).toBe(200);
  return body.access_token as string;
}

beforeAll(async () => {
  agreement = await startAgreement();
  const scoped = { scopes: ["organisation:read", "webhooks:read"] };
  clients.a = await register(agreement, "introspecting a", scoped);
  clients.b = await register(agreement, "introspecting b", scoped);
  clients.publicClient = await register(agreement, "introspecting public", { public: true });
  tokens.a = await clientCredentials(clients.a);
  tokens.b = await clientCredentials(clients.b);
  tokens.expired = await clientCredentials(clients.a);
  tokens.revoked = await clientCredentials(clients.a);
  const orm = agreement.fast.auth.app.orm;
  await orm.em.fork().execute(`update "auth"."access_token" set "expires_at" = now() - interval '1 minute' where "hash" = ?`, [tokenHash(tokens.expired)]);
  const revoked = await call(agreement.fast.url, "/oauth/revoke", { params: { client_id: clients.a.id, client_secret: clients.a.secret, token: tokens.revoked } });
  expect(revoked.status).toBe(200);
  // A refresh token (authorization_code), then its rotation: the first is rotated, the second live.
  const grants = (agreement.fast.auth.app as unknown as { grants: GrantStore }).grants;
  const member = agreement.platform.memberId;
  const code = await grants.issueAuthorizationCode({
    clientId: clients.a.id,
    organisationId: agreement.orgId,
    memberId: member,
    redirectUri: "https://app.agree.test/cb",
    scopes: ["organisation:read"],
    codeChallenge: "",
  });
  const credentials = { client_id: clients.a.id, client_secret: clients.a.secret };
  const exchanged = await call(agreement.fast.url, "/oauth/token", {
    params: { grant_type: "authorization_code", code, redirect_uri: "https://app.agree.test/cb", ...credentials },
  });
  expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
  tokens.rotated = exchanged.body.refresh_token as string;
  const rotated = await call(agreement.fast.url, "/oauth/token", { params: { grant_type: "refresh_token", refresh_token: tokens.rotated, ...credentials } });
  expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
  tokens.refresh = rotated.body.refresh_token as string;
});

afterAll(async () => {
  await agreement?.platform.stop();
});

interface Case {
  name: string;
  request: () => Request;
  /** Run first, from the case's address (counters pushed over a limit). */
  before?: (address: string) => Promise<void>;
  expected: { status: number; active?: boolean; error?: string };
}

const wrongGuesses = (c: () => Registered, n: number) => async (address: string) => {
  for (let i = 0; i < n; i++) await introspect(agreement.pipeline, post({ ...c(), secret: "bcs_guess" }, tokens.a), address);
};

const CASES: Case[] = [
  { name: "its own access token", request: () => post(clients.a, tokens.a), expected: { status: 200, active: true } },
  { name: "its own access token, Basic", request: () => basic(clients.a, tokens.a), expected: { status: 200, active: true } },
  { name: "another client's token", request: () => post(clients.a, tokens.b), expected: { status: 200, active: false } },
  { name: "its own live refresh token", request: () => post(clients.a, tokens.refresh), expected: { status: 200, active: true } },
  { name: "its own rotated refresh token", request: () => post(clients.a, tokens.rotated), expected: { status: 200, active: false } },
  { name: "its own expired access token", request: () => post(clients.a, tokens.expired), expected: { status: 200, active: false } },
  { name: "its own revoked access token", request: () => post(clients.a, tokens.revoked), expected: { status: 200, active: false } },
  { name: "a token never issued", request: () => post(clients.a, "bca_never-issued-0123456789"), expected: { status: 200, active: false } },
  { name: "a value of no token kind", request: () => post(clients.a, "not-a-token"), expected: { status: 200, active: false } },
  { name: "wrong secret", request: () => post({ ...clients.a, secret: "bcs_wrong" }, tokens.a), expected: { status: 401, error: "invalid_client" } },
  { name: "unknown client", request: () => post({ id: "bc_nobody", secret: "bcs_nothing" }, tokens.a), expected: { status: 401, error: "invalid_client" } },
  { name: "public client with a made-up secret", request: () => post({ ...clients.publicClient, secret: "bcs_made_up" }, tokens.a), expected: { status: 401, error: "invalid_client" } },
  {
    name: "right secret, client over its failure limit",
    before: wrongGuesses(() => clients.a, CLIENT_LIMIT),
    request: () => post(clients.a, tokens.a),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, address over its failure limit",
    before: async (address) => {
      for (let i = 0; i < ADDRESS_LIMIT; i++) await introspect(agreement.pipeline, post({ id: `bc_nobody${i}`, secret: "bcs_guess" }, tokens.a), address);
    },
    request: () => post(clients.b, tokens.b),
    expected: { status: 429, error: "invalid_client" },
  },
  {
    name: "right secret, failures below the limit",
    before: wrongGuesses(() => clients.b, CLIENT_LIMIT - 2),
    request: () => post(clients.b, tokens.b),
    expected: { status: 200, active: true },
  },
];

describe("introspection's fast path and its pipeline answer alike", () => {
  CASES.forEach((c, i) => {
    it(c.name, async () => {
      // Addresses of their own (TEST-NET-3): no case's counters reach another's.
      const address = `203.0.113.${i + 1}`;
      await c.before?.(address);
      const { fast, pipeline } = agreement;
      const fastChecks = fast.checks();
      const viaFast = await introspect(fast, c.request(), address);
      const fastPathAnswered = fast.checks() === fastChecks;
      const pipelineChecks = pipeline.checks();
      const viaPipeline = await introspect(pipeline, c.request(), address);

      expect(viaFast.status, JSON.stringify(viaFast.body)).toBe(c.expected.status);
      if (c.expected.error) expect(viaFast.body.error).toBe(c.expected.error);
      if (c.expected.active !== undefined) expect(viaFast.body.active).toBe(c.expected.active);
      expect(viaFast.cacheControl).toBe("no-store");
      expect(viaFast).toEqual(viaPipeline);
      if (viaFast.status === 200) {
        // An authenticated client's answer was the fast path's; the other side's, the pipeline's.
        expect(fastPathAnswered).toBe(true);
        expect(pipeline.checks()).toBeGreaterThan(pipelineChecks);
      }
      if (viaFast.body.active === true) {
        expect(viaFast.body).toMatchObject({ client_id: c.request().params.client_id ?? clients.a.id, sub: agreement.orgId, token_type: "Bearer" });
        expect(viaFast.body.exp).toBeGreaterThan(viaFast.body.iat as number);
      }
    });
  });
});
