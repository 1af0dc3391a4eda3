// The gateway's cache of bearer checks: the auth service's answer to
// AuthenticateAccessToken, keyed by the token's hash (services/shared/token-hash.ts),
// kept until min(token expiry, BEARER_CACHE_MS). A cached check needs no
// round trip at all; it is dropped as soon as the bus says the token or its
// grant was revoked (bizcard.token.revoked, bizcard.grant.revoked), which every
// gateway process hears through a non-durable subscription.
//
// The subscription is the cache's only link to revocations, so the cache
// trusts nothing while it may have missed one: with the bus connection down,
// it is emptied and every request is checked by RPC until the connection is
// back (then emptied again, for what went by meanwhile). Without a bus (a
// gateway started without NATS_URL) or with BEARER_CACHE_MS 0, nothing is cached.
import { fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { AuthenticateAccessTokenResponse } from "../gen/bizcard/auth/v1/auth_pb.js";
import { GrantRevokedSchema, TokenRevokedSchema } from "../gen/bizcard/events/v1/events_pb.js";
import type { Consumer, EventBus } from "../services/shared/event-bus/event-bus.js";
import type { Logger } from "../services/shared/logger.js";
import { tokenHash } from "../services/shared/token-hash.js";

/** What a valid access token stands for. Shared by every request of one cached check. */
export interface BearerPrincipal {
  organisationId: string;
  clientId: string;
  scopes: readonly string[];
  /** Empty for client_credentials tokens. */
  memberId: string;
  /** When the token expires, ms since the epoch. */
  expiresAt: number;
  /** The resource identifier the token was issued for (RFC 8707); empty when none is named (the REST API's). */
  audience: string;
  /**
   * The organisation's public fields (GET /oauth/me), loaded once and kept as
   * long as this check is cached, so the hot path makes no RPC at all.
   */
  organisation?: Promise<PrincipalOrganisation>;
  /** The same, once loaded: answered without a promise. */
  organisationLoaded?: PrincipalOrganisation;
}

/** A principal's organisation as GET /oauth/me answers it. */
export interface PrincipalOrganisation {
  id: string;
  name: string;
  /** `{"id","name"}` as JSON: written once, sent as it is on every later call. */
  json: string;
}

/** An RPC's per-call headers (rpcOptions, clients.ts). */
export interface RpcCallOptions {
  headers: Record<string, string>;
}

export interface BearerCacheOptions {
  /**
   * The RPC: resolves the token, or rejects (invalid_token, or the service's
   * failure). `call`: the options of the request that asked (its request id
   * and trace context); concurrent requests sharing one RPC share the first's.
   */
  authenticate: (accessToken: string, call?: RpcCallOptions) => Promise<AuthenticateAccessTokenResponse>;
  /** The bus revocations travel on; without one nothing is cached. */
  bus?: EventBus;
  /** BEARER_CACHE_MS: the longest a check is kept (0: never). */
  ttlMs: number;
  /** Bound on the entries kept (least recently used goes first). */
  maxEntries?: number;
  logger: Logger;
}

interface Entry {
  principal: BearerPrincipal;
  /** ms since the epoch: the entry is used while now < until. */
  until: number;
}

export const DEFAULT_MAX_ENTRIES = 10_000;

const pairKey = (organisationId: string, clientId: string) => `${organisationId}\u0000${clientId}`;

export class BearerCache {
  private readonly entries = new Map<string, Entry>();
  /** organisation+client -> hashes of the cached tokens of the pair, for grant.revoked. */
  private readonly byPair = new Map<string, Set<string>>();
  /** Misses being resolved: concurrent requests with one token share one RPC. */
  private readonly inflight = new Map<string, Promise<BearerPrincipal>>();
  /**
   * Bumped on every revocation heard and every change of the connection: an
   * answer whose RPC began before a bump may predate a revocation, so it is
   * not stored.
   */
  private generation = 0;
  private readonly subscriptions: Consumer[] = [];
  private stopListening: (() => void) | undefined;
  private readonly maxEntries: number;

  private constructor(private readonly options: BearerCacheOptions) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  /** Subscribes to the revocation events before the first check is cached. */
  static async open(options: BearerCacheOptions): Promise<BearerCache> {
    const cache = new BearerCache(options);
    const { bus } = options;
    if (bus && options.ttlMs > 0) {
      cache.stopListening = bus.onConnectionChange((connected) => {
        options.logger.warn(
          { connected },
          connected
            ? "bus reconnected: bearer cache emptied, caching again"
            : "bus disconnected: bearer checks go to the auth service until it is back",
        );
        cache.invalidateAll();
      });
      cache.subscriptions.push(
        await bus.subscribe("grant.revoked", (m) => {
          const event = fromBinary(GrantRevokedSchema, m.data);
          cache.revokePair(event.organisationId, event.clientId);
        }),
        await bus.subscribe("token.revoked", (m) => {
          const event = fromBinary(TokenRevokedSchema, m.data);
          cache.revokeHashes(event.accessTokenHashes);
        }),
      );
    }
    return cache;
  }

  /** Whether a check may be served from, and stored in, the cache right now. */
  private get caching(): boolean {
    const { bus, ttlMs } = this.options;
    return ttlMs > 0 && bus !== undefined && bus.connected && this.subscriptions.length > 0;
  }

  /**
   * The token's principal: cached, or one RPC shared by the concurrent
   * requests presenting it. `call` may be a function: then the RPC's options
   * (the request's trace headers, which make its trace) are made only for a
   * miss.
   */
  lookup(accessToken: string, call?: RpcCallOptions | (() => RpcCallOptions)): Promise<BearerPrincipal> {
    if (!this.caching) return this.resolve(accessToken, call);
    const hash = tokenHash(accessToken);
    const hit = this.hit(hash);
    return hit ? Promise.resolve(hit) : this.miss(hash, accessToken, call);
  }

  /**
   * The token's principal when a check is cached, without a promise (the
   * gateway's hot path: bearer.ts answers a hit synchronously); else
   * undefined, and lookup() resolves it.
   */
  cached(accessToken: string): BearerPrincipal | undefined {
    return this.caching ? this.hit(tokenHash(accessToken)) : undefined;
  }

  private hit(hash: string): BearerPrincipal | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (Date.now() < entry.until) {
      // Least recently used goes first: a hit moves to the end.
      this.entries.delete(hash);
      this.entries.set(hash, entry);
      return entry.principal;
    }
    this.remove(hash);
    return undefined;
  }

  private miss(
    hash: string,
    accessToken: string,
    call: RpcCallOptions | (() => RpcCallOptions) | undefined,
  ): Promise<BearerPrincipal> {
    const pending = this.inflight.get(hash);
    if (pending) return pending;
    const generation = this.generation;
    const started = this.resolve(accessToken, call).then((principal) => {
      if (generation === this.generation && this.caching) this.store(hash, principal);
      return principal;
    });
    this.inflight.set(hash, started);
    const forget = () => {
      if (this.inflight.get(hash) === started) this.inflight.delete(hash);
    };
    started.then(forget, forget);
    return started;
  }

  private async resolve(
    accessToken: string,
    call: RpcCallOptions | (() => RpcCallOptions) | undefined,
  ): Promise<BearerPrincipal> {
    const res = await this.options.authenticate(accessToken, typeof call === "function" ? call() : call);
    return {
      organisationId: res.organisationId,
      clientId: res.clientId,
      scopes: res.scopes,
      memberId: res.memberId,
      audience: res.audience,
      expiresAt: res.expireTime ? timestampMs(res.expireTime) : Date.now() + this.options.ttlMs,
    };
  }

  private store(hash: string, principal: BearerPrincipal): void {
    const until = Math.min(principal.expiresAt, Date.now() + this.options.ttlMs);
    if (until <= Date.now()) return;
    this.remove(hash);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.remove(oldest);
    }
    this.entries.set(hash, { principal, until });
    const key = pairKey(principal.organisationId, principal.clientId);
    let hashes = this.byPair.get(key);
    if (!hashes) this.byPair.set(key, (hashes = new Set()));
    hashes.add(hash);
  }

  private remove(hash: string): void {
    const entry = this.entries.get(hash);
    if (!entry) return;
    this.entries.delete(hash);
    const key = pairKey(entry.principal.organisationId, entry.principal.clientId);
    const hashes = this.byPair.get(key);
    hashes?.delete(hash);
    if (hashes?.size === 0) this.byPair.delete(key);
  }

  /** A revocation was heard: nothing resolved before it may be stored or shared after it. */
  private bump(): void {
    this.generation++;
    this.inflight.clear();
  }

  /** grant.revoked: every token of the organisation+client pair. */
  revokePair(organisationId: string, clientId: string): void {
    this.bump();
    const hashes = this.byPair.get(pairKey(organisationId, clientId));
    for (const hash of [...(hashes ?? [])]) this.remove(hash);
  }

  /** token.revoked: these access tokens (by hash). */
  revokeHashes(hashes: readonly string[]): void {
    this.bump();
    for (const hash of hashes) this.remove(hash);
  }

  /** The connection changed: everything goes. */
  invalidateAll(): void {
    this.bump();
    this.entries.clear();
    this.byPair.clear();
  }

  /** Entries held now (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    this.stopListening?.();
    await Promise.all(this.subscriptions.splice(0).map((s) => s.stop()));
    this.invalidateAll();
  }
}
