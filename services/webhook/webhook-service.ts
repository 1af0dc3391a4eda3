// WebhookService: REST Hooks subscriptions of the pair (organisation, client
// application). A subscription of another pair is NOT_FOUND, never
// PERMISSION_DENIED: nothing leaks that it exists. Built from its
// dependencies; main.ts (or the embedded start) serves it.
import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { UniqueConstraintViolationException, type EntityManager, type MikroORM } from "@mikro-orm/postgresql";
import {
  SubscriberSchema,
  SubscriptionSchema,
  WebhookService,
  type Subscriber as SubscriberMessage,
  type Subscription as SubscriptionMessage,
} from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeName, eventTypeOf, type EventTypeName } from "../shared/event-types.js";
import { readOwner, type Pair } from "../shared/owner.js";
import { int64IdKeyset, readPage } from "../shared/pagination.js";
import { invalid, notFound, requireUuid } from "../shared/validation.js";
import { SubscriptionEntity, type Subscription } from "./subscriptions/subscription.entity.js";
import { checkTargetUrl, type Resolver } from "./subscriptions/target-url.js";

export const WEBHOOK_SCHEMA = "webhook";


export interface WebhookServiceDeps {
  orm: MikroORM;
  /** Development and tests: http and private/loopback/link-local destinations are accepted. */
  allowInsecureTargets: boolean;
  /** How target hostnames are resolved; the system resolver when unset. */
  resolve?: Resolver;
}

function readId(id: bigint): bigint {
  if (id <= 0n) throw invalid("id", "expected a positive integer");
  return id;
}

/** Standard Webhooks signing secret: "whsec_" + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

export function toSubscriptionMessage(s: Subscription): SubscriptionMessage {
  return create(SubscriptionSchema, {
    id: s.id,
    targetUrl: s.targetUrl,
    eventType: eventTypeOf(s.eventType),
    createTime: timestampFromDate(s.createdAt),
    updateTime: timestampFromDate(s.updatedAt),
  });
}

const toSubscriberMessage = (s: Subscription): SubscriberMessage =>
  create(SubscriberSchema, { subscriptionId: s.id, clientId: s.clientId, targetUrl: s.targetUrl, secret: s.secret });

function duplicate(id?: bigint): ConnectError {
  const which = id === undefined ? "" : ` (id ${id})`;
  return new ConnectError(
    `a subscription with this target_url and event_type already exists${which}`,
    Code.AlreadyExists,
  );
}

export function createWebhookService(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  const { orm } = deps;
  const targetUrl = (value: string) =>
    checkTargetUrl(value, { allowHttp: deps.allowInsecureTargets, allowPrivate: deps.allowInsecureTargets, resolve: deps.resolve });

  const findSame = (em: EntityManager, pair: Pair, url: string, eventType: EventTypeName) =>
    em.findOne(SubscriptionEntity, { ...pair, targetUrl: url, eventType });

  async function findOwned(em: EntityManager, pair: Pair, id: bigint): Promise<Subscription> {
    const subscription = await em.findOne(SubscriptionEntity, { id, ...pair });
    if (!subscription) throw notFound("subscription");
    return subscription;
  }

  return {
    async createSubscription(req) {
      const pair = readOwner(req.owner);
      const eventType = eventTypeName(req.eventType);
      const url = await targetUrl(req.targetUrl);
      const existing = await findSame(orm.em.fork(), pair, url, eventType);
      if (existing) return { subscription: toSubscriptionMessage(existing), secret: "", created: false };
      const em = orm.em.fork();
      const now = new Date();
      const secret = newSigningSecret();
      const subscription = em.create(SubscriptionEntity, {
        ...pair,
        targetUrl: url,
        eventType,
        secret,
        createdAt: now,
        updatedAt: now,
      });
      try {
        await em.flush();
      } catch (err) {
        // A concurrent create of the same subscription won: answer with it.
        if (!(err instanceof UniqueConstraintViolationException)) throw err;
        const winner = await findSame(orm.em.fork(), pair, url, eventType);
        if (!winner) throw err;
        return { subscription: toSubscriptionMessage(winner), secret: "", created: false };
      }
      return { subscription: toSubscriptionMessage(subscription), secret, created: true };
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
      const url = req.targetUrl === undefined ? undefined : await targetUrl(req.targetUrl);
      const em = orm.em.fork();
      const subscription = await findOwned(em, pair, id);
      const next = { targetUrl: url ?? subscription.targetUrl, eventType: eventType ?? subscription.eventType };
      if (next.targetUrl === subscription.targetUrl && next.eventType === subscription.eventType) {
        return { subscription: toSubscriptionMessage(subscription) };
      }
      const clash = await findSame(em, pair, next.targetUrl, next.eventType);
      if (clash && clash.id !== subscription.id) throw duplicate(clash.id);
      subscription.targetUrl = next.targetUrl;
      subscription.eventType = next.eventType;
      subscription.updatedAt = new Date();
      try {
        await em.flush();
      } catch (err) {
        if (err instanceof UniqueConstraintViolationException) throw duplicate();
        throw err;
      }
      return { subscription: toSubscriptionMessage(subscription) };
    },

    async deleteSubscription(req) {
      const pair = readOwner(req.owner);
      const id = readId(req.id);
      const deleted = await orm.em.fork().nativeDelete(SubscriptionEntity, { id, ...pair });
      if (deleted === 0) throw notFound("subscription");
      return {};
    },

    async listSubscribers(req) {
      const organisationId = requireUuid("organisation_id", req.organisationId);
      const eventType = eventTypeName(req.eventType);
      const rows = await orm.em.fork().find(SubscriptionEntity, { organisationId, eventType }, { orderBy: { id: "asc" } });
      return { subscribers: rows.map(toSubscriberMessage) };
    },

    async deletePairSubscriptions(req) {
      const pair = readOwner(req.owner);
      const deletedCount = await orm.em.fork().nativeDelete(SubscriptionEntity, pair);
      return { deletedCount };
    },
  };
}
