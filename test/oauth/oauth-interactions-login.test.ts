// Login into server-side sessions, CSRF, and the failure rate limits, which
// hold across two auth service instances sharing the database.
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AuthService, ConsentDecision } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { AUTH_SCHEMA } from "../../services/auth/auth-service.js";
import { authMigrations } from "../../services/auth/migrations/index.js";
import { createPostgresFailureLimits } from "../../services/auth/rate-limit/postgres-failure-limits.js";
import type { StoredCounter } from "../../services/auth/rate-limit/failure-limits.js";
import { RateLimitEntity } from "../../services/auth/rate-limit/rate-limit.entity.js";
import { openServiceDatabase } from "../../services/shared/database.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { rpcError } from "../support/rpc.js";
import {
  auth,
  db,
  login,
  oauthError,
  orgId,
  params,
  PASSWORD,
  query,
  replica,
  rpc,
  startLoggedIn,
  useInteractionsSuite,
} from "../support/interactions-suite.js";

useInteractionsSuite();

describe("login and sessions", () => {
  it("the right password opens a session bound to the interaction; only the session's hash is stored", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({}) });
    const res = await login(interactionId, "  Ada@ACME.test ");
    expect(res.sessionId).toMatch(/^bcsess_[A-Za-z0-9_-]{43}$/);
    expect(res.interaction).toMatchObject({
      id: interactionId,
      loggedIn: true,
      memberEmail: "ada@acme.test",
      organisationId: orgId,
    });
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
      expect(oauthError(err)).toMatchObject({
        error: "invalid_credentials",
        errorDescription: "email or password is wrong",
      });
    }
    const { interaction } = await rpc().getInteraction({ interactionId });
    expect(interaction?.loggedIn).toBe(false);
  });

  it("a wrong or missing CSRF token is refused before the credentials are looked at", async () => {
    const { interactionId } = await rpc().startAuthorization({ parameters: params({}) });
    const other = await rpc().startAuthorization({ parameters: params({}) });
    const { interaction: otherInteraction } = await rpc().getInteraction({ interactionId: other.interactionId });
    for (const csrfToken of ["", "x", otherInteraction!.csrfToken]) {
      const err = await rpcError(
        rpc().login({
          interactionId,
          csrfToken,
          email: "ada@acme.test",
          password: PASSWORD,
          remoteAddress: "192.0.2.1",
        }),
      );
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
      {
        databaseUrl: db.url,
        databasePoolMax: db.poolMax,
        logger: (await import("../../services/shared/logger.js")).createLogger("test", "silent"),
        config: { MIGRATE_ON_START: false },
      },
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
      // At the limit: a read of the counters refuses now (the next consume would too).
      const check = async (address: string) => {
        const keys = limits.counterKeys("client", "bc_limited", address);
        const sql = `select ${limits.countersSql('(select unnest(?::text[]) as "key")')} as "counters"`;
        const { rows } = await orm.em.getKnex().raw<{ rows: { counters: StoredCounter[] }[] }>(sql, [keys]);
        return limits.overLimit("client", rows[0]!.counters);
      };
      const limited = await check("192.0.2.50");
      expect(limited).toBeInstanceOf(ConnectError);
      expect(oauthError(limited as ConnectError)).toMatchObject({ error: "invalid_client" });
      expect(await check("192.0.2.51")).toBeUndefined();
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
