// The token endpoint's fast path for client_credentials
// (services/auth/tokens/client-credentials-fast-path.ts) against the real
// auth service (PostgreSQL failure limits) behind the gateway over HTTP: a
// right request is answered by it, and every rule it folds into its one
// statement still refuses exactly as the pipeline does (the statement
// inserts nothing, the pipeline answers and counts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { startPlatform, type AuthApp, type Platform, type StartedService } from "../support/platform.js";

const TOKEN = "f".repeat(40);

let platform: Platform;
let auth: StartedService<AuthApp>;
let url: string;
let orgId: string;

interface Registered {
  id: string;
  secret: string;
}

beforeAll(async () => {
  // The real app: PostgreSQL failure limits at their defaults (10 a minute per client and address).
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    gateway: true,
    member: { organisation: "Fast Cards", email: "ada@fast.test", password: "correct horse battery" },
  });
  ({ auth, base: url, organisationId: orgId } = platform);
});

afterAll(async () => {
  await platform?.stop();
});

async function register(name: string, extra: { scopes?: string[]; owned?: boolean; grantTypes?: string[] } = {}): Promise<Registered> {
  const res = await auth.client(AuthService).createClient({
    name,
    redirectUris: ["https://app.fast.test/cb"],
    scopes: extra.scopes ?? [],
    ownerOrganisationId: extra.owned === false ? "" : orgId,
    grantTypes: extra.grantTypes ?? [],
  });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, string | number>;
}

async function token(params: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, string | number> };
}

const grant = (c: Registered, scope?: string) => ({
  grant_type: "client_credentials",
  client_id: c.id,
  client_secret: c.secret,
  ...(scope === undefined ? {} : { scope }),
});

const stored = async (accessToken: string) =>
  (
    await auth.app.orm.em
      .fork()
      .execute(`select "client_id", "organisation_id", "member_id", "scopes", "expires_at" from "auth"."access_token" where "hash" = ?`, [
        tokenHash(accessToken),
      ])
  )[0] as { client_id: string; organisation_id: string; member_id: string | null; scopes: string[]; expires_at: Date } | undefined;

const counters = async () => (await auth.app.orm.em.fork().execute(`select count(*)::int as "n" from "auth"."rate_limit"`))[0].n as number;

describe("client_credentials answered by one statement", () => {
  it("issues a durable token for the organisation, with the asked scopes in the server's order, or all the client's", async () => {
    const c = await register("Sync", { scopes: ["organisation:read", "webhooks:read", "webhooks:write"] });
    const narrowed = await token(grant(c, "webhooks:read organisation:read"));
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.headers.get("cache-control")).toBe("no-store");
    expect(narrowed.body).toMatchObject({ token_type: "Bearer", scope: "organisation:read webhooks:read", expires_in: 3600 });
    expect(narrowed.body.refresh_token).toBeUndefined();
    const row = await stored(String(narrowed.body.access_token));
    expect(row).toMatchObject({ client_id: c.id, organisation_id: orgId, member_id: null, scopes: ["organisation:read", "webhooks:read"] });

    const all = await token(grant(c));
    expect(all.status).toBe(200);
    expect(all.body.scope).toBe("organisation:read webhooks:read webhooks:write");
    expect((await stored(String(all.body.access_token)))?.scopes).toEqual(["organisation:read", "webhooks:read", "webhooks:write"]);

    // client_secret_basic too.
    const basic = await token(
      { grant_type: "client_credentials" },
      { authorization: `Basic ${Buffer.from(`${encodeURIComponent(c.id)}:${encodeURIComponent(c.secret)}`).toString("base64")}` },
    );
    expect(basic.status, JSON.stringify(basic.body)).toBe(200);
  });

  it("many parallel requests each get their own token", async () => {
    const c = await register("Parallel");
    const before = await counters();
    const answers = await Promise.all(Array.from({ length: 30 }, () => token(grant(c, "organisation:read"))));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const tokens = new Set(answers.map((a) => String(a.body.access_token)));
    expect(tokens.size).toBe(30);
    for (const t of tokens) expect((await stored(t))?.client_id).toBe(c.id);
    // A right secret counts nothing.
    expect(await counters()).toBe(before);
  });

  it("refuses as the pipeline does: wrong secret, scope outside the client's, unknown scope, no owner, grant type not allowed", async () => {
    const c = await register("Narrow", { scopes: ["organisation:read"] });
    const wrong = await token({ ...grant(c), client_secret: "bcs_wrong" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("invalid_client");

    const wider = await token(grant(c, "organisation:read webhooks:write"));
    expect(wider.status).toBe(400);
    expect(wider.body.error).toBe("invalid_scope");

    const unknown = await token(grant(c, "admin"));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe("invalid_scope");

    const unowned = await register("Unowned", { owned: false, grantTypes: ["authorization_code"] });
    const noOwner = await token(grant(unowned));
    expect(noOwner.status).toBe(400);
    expect(noOwner.body.error).toBe("unauthorized_client");

    const codeOnly = await register("Code only", { grantTypes: ["authorization_code", "refresh_token"] });
    const notAllowed = await token(grant(codeOnly));
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.body.error).toBe("unauthorized_client");
  });

  it("past the failure limit a right secret is refused (429) too, and other clients from the address are limited by the address's counter", async () => {
    const c = await register("Guessed");
    const guesses = await Promise.all(Array.from({ length: 12 }, () => token({ ...grant(c), client_secret: "bcs_guess" })));
    expect(guesses.filter((a) => a.status === 429).length).toBeGreaterThanOrEqual(2);
    const right = await token(grant(c));
    expect(right.status).toBe(429);
    expect(right.body.error).toBe("invalid_client");
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);

    // The address's own limit (100 a minute, any client): push it over, then a right request of another client is refused.
    const other = await register("Same address");
    expect((await token(grant(other))).status).toBe(200);
    await Promise.all(Array.from({ length: 95 }, (_, i) => token({ ...grant(other), client_id: `bc_nobody${i}`, client_secret: "bcs_guess" })));
    const limited = await token(grant(other));
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe("invalid_client");
  });
});
