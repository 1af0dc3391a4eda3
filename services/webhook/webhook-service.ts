// WebhookService: REST Hooks subscriptions of the pair (organisation, client
// application). Another pair's subscription is NOT_FOUND: nothing leaks that
// it exists. A target URL not already stored is resolved outside any
// transaction (target-url.ts); writes run under a lock on the pair, so the
// per-pair cap cannot be overshot. Signing secrets are stored sealed
// (secret-box.ts) and opened only for the delivery service (ListSubscribers).
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { SubscriptionSchema, type WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeName, eventTypeOf, type EventTypeName } from "../shared/event-types.js";
import { readOwner, type Pair } from "../shared/owner.js";
import { int64IdKeyset, readPage } from "../shared/pagination.js";
import { invalid, notFound } from "../shared/validation.js";
import { SubscriptionEntity, type Subscription } from "./subscriptions/subscription.entity.js";
import type { Resolver } from "../shared/net/dns-resolver.js";
import { checkDestination, parseTargetUrl } from "./subscriptions/target-url.js";
import { SubscriptionEndEntity } from "./subscriptions/subscription-end.entity.js";
import { endReasonOf, endSubscriptions, toSubscriptionEndMessage } from "./subscriptions/subscription-end.js";
import { reencryptSecrets, rotateSecret, signingPreviousSecret } from "./subscriptions/secret-rotation.js";
import { readingSecret, type SecretBox } from "./subscriptions/secret-box.js";
import { subscriberLists } from "./subscriptions/subscriber-lists.js";

export const WEBHOOK_SCHEMA = "webhook";

interface WebhookServiceDeps {
  orm: MikroORM;
  /** Development and tests: http and private destinations are accepted. */
  allowInsecureTargets: boolean;
  resolve: Resolver;
  /** WEBHOOK_DNS_TIMEOUT_MS; past it, UNAVAILABLE. */
  resolveTimeoutMs: number;
  maxSubscriptionsPerPair: number;
  /** How long a rotated secret keeps signing; 0: not at all. */
  secretOverlapSeconds: number;
  secrets: SecretBox;
  /**
   * After each commit that changes what deliveries need, before the RPC answers (subscriptions.changed); never throws.
   */
  changed?: (organisationId: string) => Promise<void>;
  /** ListSubscribers as named prepared statements (real PostgreSQL only). */
  preparedStatements?: boolean;
}

function readId(id: bigint): bigint {
  if (id <= 0n) throw invalid("id", "expected a positive integer");
  return id;
}

/** Standard Webhooks signing secret: "whsec_" + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

function toSubscriptionMessage(s: Subscription) {
  const previous = signingPreviousSecret(s);
  return create(SubscriptionSchema, {
    id: s.id,
    targetUrl: s.targetUrl,
    eventType: eventTypeOf(s.eventType),
    createTime: timestampFromDate(s.createdAt),
    updateTime: timestampFromDate(s.updatedAt),
    ...(s.disabledAt ? { disableTime: timestampFromDate(s.disabledAt), disabledReason: s.disabledReason ?? "" } : {}),
    ordered: s.ordered,
    ...(previous ? { previousSecretExpireTime: timestampFromDate(previous.expiresAt) } : {}),
  });
}

/** The longest disabled_reason kept (DisableSubscription). */
const DISABLED_REASON_MAX_LENGTH = 500;

/** Serialises creates and updates of one pair (two creates must not both see room for one more), until commit. */
async function lockPair(em: EntityManager, pair: Pair): Promise<void> {
  const key = `webhook.subscription:${pair.organisationId}:${pair.clientId}`;
  await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [key]);
}

export function createWebhookService(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  const { orm, secrets } = deps;
  const changed = (organisationId: string) => deps.changed?.(organisationId);
  const insecure = deps.allowInsecureTargets;
  const parse = (value: string) => parseTargetUrl(value, { allowHttp: insecure, allowPrivate: insecure });
  const destination = (parsed: ReturnType<typeof parse>) =>
    checkDestination(parsed, { resolve: deps.resolve, resolveTimeoutMs: deps.resolveTimeoutMs });

  const findSame = (em: EntityManager, pair: Pair, url: string, eventType: EventTypeName) =>
    em.findOne(SubscriptionEntity, { ...pair, targetUrl: url, eventType });

  async function findOwned(em: EntityManager, pair: Pair, id: bigint): Promise<Subscription> {
    const subscription = await em.findOne(SubscriptionEntity, { id, ...pair });
    if (!subscription) throw notFound("subscription");
    return subscription;
  }

  return {
    ...subscriberLists(deps),

    async createSubscription(req) {
      const pair = readOwner(req.owner);
      const eventType = eventTypeName(req.eventType);
      const parsed = parse(req.targetUrl);
      const url = parsed.href;
      // The same create again (a retry whose answer was lost): the existing one, whatever DNS says today.
      const existing = await findSame(orm.em.fork(), pair, url, eventType);
      if (existing) return { subscription: toSubscriptionMessage(existing), secret: "", created: false };
      // Outside the transaction: a slow name holds no lock and no connection.
      await destination(parsed);
      const secret = newSigningSecret();
      const { subscription, created } = await orm.em.fork().transactional(async (em) => {
        await lockPair(em, pair);
        const same = await findSame(em, pair, url, eventType);
        if (same) return { subscription: same, created: false };
        const max = deps.maxSubscriptionsPerPair;
        if ((await em.count(SubscriptionEntity, pair)) >= max)
          throw new ConnectError(
            `this application already has ${max} subscriptions in this organisation, the most allowed; delete one before creating another`,
            Code.FailedPrecondition,
          );
        const now = new Date();
        const subscription = em.create(SubscriptionEntity, {
          ...pair,
          targetUrl: url,
          eventType,
          secret: secrets.seal(secret),
          ordered: req.ordered,
          createdAt: now,
          updatedAt: now,
        });
        await em.flush();
        return { subscription, created: true };
      });
      return { subscription: toSubscriptionMessage(subscription), secret: created ? secret : "", created };
    },

    async getSubscription(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      return { subscription: toSubscriptionMessage(await findOwned(orm.em.fork(), pair, id)) };
    },

    async listSubscriptions(req) {
      const pair = readOwner(req.owner);
      const page = await readPage(int64IdKeyset<Subscription>(), req, (after, options) =>
        orm.em.fork().find(SubscriptionEntity, { ...pair, ...after }, options),
      );
      return { subscriptions: page.rows.map(toSubscriptionMessage), nextPageToken: page.nextPageToken };
    },

    async updateSubscription(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      const eventType = req.eventType === undefined ? undefined : eventTypeName(req.eventType);
      const parsed = req.targetUrl === undefined ? undefined : parse(req.targetUrl);
      // What the subscription becomes; unchanged (not disabled either, as any update re-enables) when null.
      const target = (s: Subscription) => {
        const next = {
          targetUrl: parsed?.href ?? s.targetUrl,
          eventType: eventType ?? s.eventType,
          ordered: req.ordered ?? s.ordered,
        };
        const same = next.targetUrl === s.targetUrl && next.eventType === s.eventType && next.ordered === s.ordered;
        return same && !s.disabledAt ? null : next;
      };
      const current = await findOwned(orm.em.fork(), pair, id);
      // Nothing changes: the subscription as it is, update_time untouched.
      if (!target(current)) return { subscription: toSubscriptionMessage(current) };
      if (parsed && parsed.href !== current.targetUrl) await destination(parsed);
      const updated = await orm.em.fork().transactional(async (em) => {
        await lockPair(em, pair);
        // Read again under the lock: a field this request leaves alone keeps what a concurrent update set.
        const subscription = await findOwned(em, pair, id);
        const next = target(subscription);
        if (!next) return subscription;
        const clash = await findSame(em, pair, next.targetUrl, next.eventType);
        if (clash && clash.id !== subscription.id)
          throw new ConnectError(
            `a subscription with this target_url and event_type already exists (id ${clash.id})`,
            Code.AlreadyExists,
          );
        Object.assign(subscription, next);
        subscription.disabledAt = null;
        subscription.disabledReason = null;
        subscription.updatedAt = new Date();
        await em.flush();
        return subscription;
      });
      await changed(pair.organisationId);
      return { subscription: toSubscriptionMessage(updated) };
    },

    async deleteSubscription(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      const deleted = await endSubscriptions(orm.em.fork(), pair, endReasonOf(req.reason), id);
      if (deleted === 0) throw notFound("subscription");
      await changed(pair.organisationId);
      return {};
    },

    async deletePairSubscriptions(req) {
      const pair = readOwner(req.owner);
      const deletedCount = await endSubscriptions(orm.em.fork(), pair, "grant_revoked");
      if (deletedCount > 0) await changed(pair.organisationId);
      return { deletedCount };
    },

    async getSubscriptionEnd(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      const end = await orm.em.fork().findOne(SubscriptionEndEntity, { id, ...pair });
      if (!end) throw notFound("subscription end");
      return { end: toSubscriptionEndMessage(end) };
    },

    async rotateSubscriptionSecret(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      const secret = newSigningSecret();
      const em = orm.em.fork();
      // The secret it replaces, when it keeps signing, is sealed again under the current key should it not be.
      const rotated = await rotateSecret(
        em,
        { pair, id, secret: secrets.seal(secret), overlapSeconds: deps.secretOverlapSeconds },
        (old) => readingSecret(id, () => secrets.reseal(old)),
      );
      if (!rotated) throw notFound("subscription");
      await changed(pair.organisationId);
      const subscription = await findOwned(em, pair, id);
      const expires = rotated.previousSecretExpiresAt;
      return {
        subscription: toSubscriptionMessage(subscription),
        secret,
        ...(expires ? { oldSecretExpireTime: timestampFromDate(expires) } : {}),
      };
    },

    async reencryptSecrets() {
      return { reencryptedCount: await reencryptSecrets(orm.em, secrets), keyId: secrets.currentKeyId };
    },

    async disableSubscription(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      if (!req.failingSince) throw invalid("failing_since", "required");
      const failingSince = timestampDate(req.failingSince);
      const reason = req.reason.trim();
      if (!reason) throw invalid("reason", "required");
      // One statement: disabled only while enabled and untouched by its owner since the streak began.
      const em = orm.em.fork();
      const rows = await em.execute<{ id: string }[]>(
        `update "${WEBHOOK_SCHEMA}"."subscription" set "disabled_at" = now(), "disabled_reason" = ?
          where "id" = ? and "organisation_id" = ? and "client_id" = ? and "disabled_at" is null and "updated_at" <= ?
          returning "id"`,
        [reason.slice(0, DISABLED_REASON_MAX_LENGTH), id.toString(), pair.organisationId, pair.clientId, failingSince],
      );
      if (rows.length > 0) await changed(pair.organisationId);
      const subscription = await findOwned(em, pair, id);
      return { subscription: toSubscriptionMessage(subscription), disabled: rows.length > 0 };
    },
  };
}
