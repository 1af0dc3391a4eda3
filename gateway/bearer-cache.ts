// The gateway's cache of bearer checks (AuthenticateAccessToken), keyed by the
// token's hash, kept until min(token expiry, BEARER_CACHE_MS) and dropped as
// soon as the bus says the token or its grant was revoked. The bus is its only
// link to revocations: nothing is cached while it is down, or without it.
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
  expiresAt: number;
  /** The resource identifier the token was issued for (RFC 8707); empty: the REST API's. */
  audience: string;
  /** The organisation (GET /oauth/me), loaded once and kept with this check: no RPC on the hot path. */
  organisation?: Promise<PrincipalOrganisation>;
  /** The same, once loaded: answered without a promise. */
  organisationLoaded?: PrincipalOrganisation;
}

export interface PrincipalOrganisation {
  id: string;
  name: string;
  /** `{"id","name"}` as JSON: written once, sent as it is on every later call. */
  json: string;
}

type RpcCallOptions = { headers: Record<string, string> };

interface BearerCacheOptions {
  /** The RPC; `call`: the asking request's options (concurrent requests sharing one RPC share the first's). */
  authenticate: (accessToken: string, call?: RpcCallOptions) => Promise<AuthenticateAccessTokenResponse>;
  bus?: EventBus;
  /** BEARER_CACHE_MS: the longest a check is kept (0: never). */
  ttlMs: number;
  /** Bound on the entries kept (least recently used goes first). */
  maxEntries?: number;
  logger: Logger;
}

interface Entry {
  principal: BearerPrincipal;
  until: number;
}

export class BearerCache {
  private readonly entries = new Map<string, Entry>();
  /** Misses being resolved: concurrent requests with one token share one RPC. */
  private readonly inflight = new Map<string, Promise<BearerPrincipal>>();
  /** Bumped on every revocation and change of connection: an answer whose RPC began before may predate one. */
  private generation = 0;
  private readonly subscriptions: Consumer[] = [];
  private stopListening: (() => void) | undefined;

  private constructor(private readonly options: BearerCacheOptions) {}

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

  private get caching(): boolean {
    const { bus, ttlMs } = this.options;
    return ttlMs > 0 && bus !== undefined && bus.connected && this.subscriptions.length > 0;
  }

  /** The token's principal: cached, or one RPC shared by concurrent requests; `call` is made only on a miss. */
  lookup(accessToken: string, call?: () => RpcCallOptions): Promise<BearerPrincipal> {
    if (!this.caching) return this.resolve(accessToken, call);
    const hash = tokenHash(accessToken);
    const hit = this.hit(hash);
    return hit ? Promise.resolve(hit) : this.miss(hash, accessToken, call);
  }

  /** The token's principal when a check is cached, without a promise (the hot path); else undefined. */
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
    this.entries.delete(hash);
    return undefined;
  }

  private miss(hash: string, accessToken: string, call?: () => RpcCallOptions): Promise<BearerPrincipal> {
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

  private async resolve(accessToken: string, call?: () => RpcCallOptions): Promise<BearerPrincipal> {
    const res = await this.options.authenticate(accessToken, call?.());
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
    this.entries.delete(hash);
    while (this.entries.size >= (this.options.maxEntries ?? 10_000)) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    this.entries.set(hash, { principal, until });
  }

  /** A revocation was heard: nothing resolved before it may be stored or shared after it. */
  private bump(): void {
    this.generation++;
    this.inflight.clear();
  }

  /** grant.revoked: every token of the organisation+client pair (a rare event: a scan will do). */
  revokePair(organisationId: string, clientId: string): void {
    this.bump();
    for (const [hash, { principal }] of this.entries) {
      if (principal.organisationId === organisationId && principal.clientId === clientId) this.entries.delete(hash);
    }
  }

  revokeHashes(hashes: readonly string[]): void {
    this.bump();
    for (const hash of hashes) this.entries.delete(hash);
  }

  invalidateAll(): void {
    this.bump();
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    this.stopListening?.();
    await Promise.all(this.subscriptions.splice(0).map((s) => s.stop()));
    this.invalidateAll();
  }
}
