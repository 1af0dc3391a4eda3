// The gateway's bearer cache and the bus subscription it hangs on: two caches
// on two connections to one NATS (two gateway processes) both drop a check
// when token.revoked or grant.revoked is published; nothing is served from the
// cache while the connection is down; concurrent misses share one check; an
// entry never outlives its token. The auth service's answer is a counting
// function here (the cache is what is under test); test/oauth/oauth-resource-revocation.test.ts
// goes through the real auth service.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AuthenticateAccessTokenResponseSchema,
  type AuthenticateAccessTokenResponse,
} from "../../gen/bizcard/auth/v1/auth_pb.js";
import { GrantRevokedSchema, TokenRevokedSchema } from "../../gen/bizcard/events/v1/events_pb.js";
import { BearerCache } from "../../gateway/bearer-cache.js";
import { NoConsumerError, type EventBus } from "../../services/shared/event-bus/event-bus.js";
import { InProcessBus } from "../../services/shared/event-bus/in-process-bus.js";
import { openBus } from "../../services/shared/event-bus/open-bus.js";
import { createLogger } from "../../services/shared/logger.js";
import { tokenHash } from "../../services/shared/token-hash.js";
import { testConfig, uniqueName } from "../support/backends.js";
import { NatsServer, waitFor } from "../support/processes.js";
import { deleteStream } from "../support/stream.js";

const logger = createLogger("test", "silent");

/** A stand-in for AuthenticateAccessToken that counts its calls, per token. */
function authService(ttlMs = 3_600_000) {
  const calls = new Map<string, number>();
  const pairs = new Map<string, { organisationId: string; clientId: string; scopes: string[] }>();
  const authenticate = async (token: string): Promise<AuthenticateAccessTokenResponse> => {
    calls.set(token, (calls.get(token) ?? 0) + 1);
    // The answer comes on a later turn of the event loop, as an RPC's does: lookups made meanwhile find it in flight.
    await new Promise<void>((done) => setImmediate(done));
    const pair = pairs.get(token) ?? { organisationId: "org-1", clientId: "client-1", scopes: ["organisation:read"] };
    return create(AuthenticateAccessTokenResponseSchema, { ...pair, expireTime: timestampFromMs(Date.now() + ttlMs) });
  };
  return { authenticate, calls, pairs, count: (token: string) => calls.get(token) ?? 0 };
}

const tokenRevoked = (...tokens: string[]) =>
  toBinary(
    TokenRevokedSchema,
    create(TokenRevokedSchema, {
      eventId: randomUUID(),
      organisationId: "org-1",
      clientId: "client-1",
      accessTokenHashes: tokens.map(tokenHash),
    }),
  );
const grantRevoked = (organisationId: string, clientId: string) =>
  toBinary(
    GrantRevokedSchema,
    create(GrantRevokedSchema, { eventId: randomUUID(), organisationId, clientId, reason: "withdrawn" }),
  );

describe("two gateways sharing NATS", () => {
  let nats: NatsServer;
  const config = () => testConfig({ NATS_URL: nats.url, NATS_STREAM: stream, NATS_SUBJECT_PREFIX: prefix });
  const stream = uniqueName("T_");
  const prefix = uniqueName("t");
  let publisher: EventBus;
  let busA: EventBus;
  let busB: EventBus;
  const auth = authService();
  let cacheA: BearerCache;
  let cacheB: BearerCache;

  beforeAll(async () => {
    // A private server: one test stops it.
    nats = await NatsServer.start();
    publisher = await openBus(config(), "publisher", logger);
    busA = await openBus(config(), "gateway-a", logger);
    busB = await openBus(config(), "gateway-b", logger);
    cacheA = await BearerCache.open({ authenticate: auth.authenticate, bus: busA, ttlMs: 30_000, logger });
    cacheB = await BearerCache.open({ authenticate: auth.authenticate, bus: busB, ttlMs: 30_000, logger });
    // The stream exists before the timed publishes (its creation is not what they measure).
    await publisher.publish(`${prefix}.warm.up`, new Uint8Array(), randomUUID());
  }, 60_000);

  afterAll(async () => {
    await cacheA?.close();
    await cacheB?.close();
    for (const bus of [busA, busB, publisher]) await bus?.close();
    await deleteStream(nats.url, stream).catch(() => undefined);
    await nats?.close();
  });

  it("each caches a check: the second lookup makes no call", async () => {
    const token = `bca_${randomUUID()}`;
    const first = await cacheA.lookup(token);
    expect(first).toMatchObject({ organisationId: "org-1", clientId: "client-1", scopes: ["organisation:read"] });
    expect(await cacheA.lookup(token)).toBe(first);
    await cacheB.lookup(token);
    await cacheB.lookup(token);
    expect(auth.count(token)).toBe(2);
  });

  it("cached() answers a cached check without a promise, and nothing for a token not checked or revoked", async () => {
    const token = `bca_${randomUUID()}`;
    expect(cacheA.cached(token)).toBeUndefined();
    const first = await cacheA.lookup(token);
    expect(cacheA.cached(token)).toBe(first);
    cacheA.revokeHashes([tokenHash(token)]);
    expect(cacheA.cached(token)).toBeUndefined();
    expect(auth.count(token)).toBe(1);
  });

  it("concurrent misses for one token share one call", async () => {
    const token = `bca_${randomUUID()}`;
    const all = await Promise.all(Array.from({ length: 20 }, () => cacheA.lookup(token)));
    expect(new Set(all).size).toBe(1);
    expect(auth.count(token)).toBe(1);
  });

  it("token.revoked (published through JetStream) drops the token on both within a second, and only it", async () => {
    const revoked = `bca_${randomUUID()}`;
    const kept = `bca_${randomUUID()}`;
    for (const cache of [cacheA, cacheB]) {
      await cache.lookup(revoked);
      await cache.lookup(kept);
    }
    expect([auth.count(revoked), auth.count(kept)]).toEqual([2, 2]);
    const started = Date.now();
    await publisher.publish(`${prefix}.token.revoked`, tokenRevoked(revoked), randomUUID());
    // Dropped means: the next lookup asks the auth service again.
    await waitFor(
      async () => {
        await cacheA.lookup(revoked);
        await cacheB.lookup(revoked);
        return auth.count(revoked) >= 4 ? true : undefined;
      },
      5000,
      "both caches to drop the revoked token",
    );
    expect(Date.now() - started).toBeLessThan(1000);
    await cacheA.lookup(kept);
    await cacheB.lookup(kept);
    expect(auth.count(kept)).toBe(2);
  });

  it("grant.revoked drops every token of the organisation+client pair on both, and no other pair's", async () => {
    const pairTokens = [`bca_${randomUUID()}`, `bca_${randomUUID()}`];
    const other = `bca_${randomUUID()}`;
    for (const t of pairTokens) auth.pairs.set(t, { organisationId: "org-2", clientId: "client-2", scopes: [] });
    auth.pairs.set(other, { organisationId: "org-2", clientId: "client-3", scopes: [] });
    for (const cache of [cacheA, cacheB]) for (const t of [...pairTokens, other]) await cache.lookup(t);
    const started = Date.now();
    await publisher.publish(`${prefix}.grant.revoked`, grantRevoked("org-2", "client-2"), randomUUID());
    await waitFor(
      async () => {
        for (const cache of [cacheA, cacheB]) for (const t of pairTokens) await cache.lookup(t);
        return pairTokens.every((t) => auth.count(t) >= 4) ? true : undefined;
      },
      5000,
      "both caches to drop the pair's tokens",
    );
    expect(Date.now() - started).toBeLessThan(1000);
    for (const cache of [cacheA, cacheB]) await cache.lookup(other);
    expect(auth.count(other)).toBe(2);
  });

  it("while NATS is down nothing is served from the cache; once it is back, checks are cached again", async () => {
    const token = `bca_${randomUUID()}`;
    await cacheA.lookup(token);
    await cacheA.lookup(token);
    expect(auth.count(token)).toBe(1);
    await nats.stop();
    await waitFor(() => (!busA.connected ? true : undefined), 10_000, "the disconnection to be noticed");
    expect(cacheA.size).toBe(0);
    await cacheA.lookup(token);
    await cacheA.lookup(token);
    expect(auth.count(token)).toBe(3);

    await nats.restart();
    await waitFor(() => (busA.connected && busB.connected ? true : undefined), 20_000, "the reconnection");
    await cacheA.lookup(token);
    await cacheA.lookup(token);
    expect(auth.count(token)).toBe(4);
    // And the subscription is live again: a revocation still reaches it (once
    // JetStream, restarting with the server, takes the publish again).
    const revocation = { data: tokenRevoked(token), id: randomUUID() };
    await waitFor(
      () => publisher.publish(`${prefix}.token.revoked`, revocation.data, revocation.id).then(() => true),
      30_000,
      "a publish after the restart",
    );
    await waitFor(
      async () => {
        await cacheA.lookup(token);
        return auth.count(token) >= 5 ? true : undefined;
      },
      5000,
      "the revocation after the reconnection",
    );
  }, 60_000);
});

describe("the bearer cache alone", () => {
  it("never keeps a check past the token's expiry", async () => {
    const auth = authService(300);
    const bus = new InProcessBus("t");
    const cache = await BearerCache.open({ authenticate: auth.authenticate, bus, ttlMs: 30_000, logger });
    const token = "bca_short";
    await cache.lookup(token);
    await cache.lookup(token);
    expect(auth.count(token)).toBe(1);
    await waitFor(
      async () => {
        await cache.lookup(token);
        return auth.count(token) >= 2 ? true : undefined;
      },
      5000,
      "the expired entry to be dropped",
    );
    await cache.close();
  });

  it("holds at most maxEntries, dropping the least recently used", async () => {
    const auth = authService();
    const cache = await BearerCache.open({
      authenticate: auth.authenticate,
      bus: new InProcessBus("t"),
      ttlMs: 30_000,
      maxEntries: 2,
      logger,
    });
    await cache.lookup("a");
    await cache.lookup("b");
    await cache.lookup("a"); // a is now the most recent
    await cache.lookup("c"); // b goes
    expect(cache.size).toBe(2);
    await cache.lookup("a");
    await cache.lookup("b");
    expect([auth.count("a"), auth.count("b"), auth.count("c")]).toEqual([1, 2, 1]);
    await cache.close();
  });

  it("without a bus, or with BEARER_CACHE_MS 0, checks every time", async () => {
    const auth = authService();
    const none = await BearerCache.open({ authenticate: auth.authenticate, ttlMs: 30_000, logger });
    const off = await BearerCache.open({
      authenticate: auth.authenticate,
      bus: new InProcessBus("t"),
      ttlMs: 0,
      logger,
    });
    for (const cache of [none, off]) {
      await cache.lookup("x");
      await cache.lookup("x");
    }
    expect(auth.count("x")).toBe(4);
  });

  it("a failed check is not kept", async () => {
    let calls = 0;
    const cache = await BearerCache.open({
      authenticate: async () => {
        calls++;
        throw new Error("invalid_token");
      },
      bus: new InProcessBus("t"),
      ttlMs: 30_000,
      logger,
    });
    await expect(cache.lookup("bad")).rejects.toThrow("invalid_token");
    await expect(cache.lookup("bad")).rejects.toThrow("invalid_token");
    expect(calls).toBe(2);
  });
});

describe("the in-process bus's subscriptions", () => {
  it("fan out to every subscriber; a subject with only subscribers resolves; one with neither is refused", async () => {
    const bus = new InProcessBus("p");
    const got: string[] = [];
    await bus.subscribe("token.revoked", (m) => void got.push(`a:${m.msgId}`));
    await bus.subscribe("token.*", async () => {
      throw new Error("a failing subscriber is logged, not thrown");
    });
    await bus.subscribe(">", (m) => void got.push(`b:${m.msgId}`));
    await bus.publish("p.token.revoked", new Uint8Array([1]), "m1");
    expect(got).toEqual(["a:m1", "b:m1"]);
    const stop = await bus.subscribe("grant.revoked", () => void got.push("grant"));
    await stop.stop();
    await bus.close();
    await expect(bus.publish("p.grant.revoked", new Uint8Array(), "m2")).rejects.toBeInstanceOf(NoConsumerError);
  });

  it("subscribers and durable consumers both get the message", async () => {
    const bus = new InProcessBus("p");
    const got: string[] = [];
    await bus.subscribe("grant.revoked", () => void got.push("subscriber"));
    await bus.consume({ durable: "webhook", subject: "grant.revoked" }, async () => void got.push("durable"));
    await bus.publish("p.grant.revoked", new Uint8Array(), "m1");
    expect(got).toEqual(["subscriber", "durable"]);
    expect(bus.connected).toBe(true);
  });
});
