// DeliveryService: one owner's subscription's delivery log, newest first, a
// manual retry, recovery, and the operators' list of failed deliveries. The
// owner is part of every query: another owner's rows are never listed, and
// are NOT_FOUND for a retry.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client, type ServiceImpl } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { DeliveryAttemptSchema, DeliverySchema } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { readOwner } from "../shared/owner.js";
import { int64IdKeyset, readPage, timeIdKeyset } from "../shared/pagination.js";
import { invalid, notFound, requireUuid } from "../shared/validation.js";
import type { DeliveryStore } from "./deliveries/delivery-store.js";
import { DeliveryAttemptEntity, DeliveryEntity } from "./deliveries/delivery.entity.js";
import type { Delivery, DeliveryAttempt } from "./deliveries/delivery.entity.js";
import { readOrderedHead, waitsForHead, type OrderedHead } from "./deliveries/ordered-head.js";
import { createRecovery } from "./recovery/recover-deliveries.js";
import { createDeliveryStates } from "./states/delivery-states.js";

export const DELIVERY_SCHEMA = "delivery";

// create() reads only the message's fields from the row: the columns named as they are copied.
const toAttemptMessage = (a: DeliveryAttempt) =>
  create(DeliveryAttemptSchema, {
    ...a,
    subscriptionId: BigInt(a.subscriptionId),
    attemptTime: timestampFromDate(a.attemptedAt),
    ...(a.nextAttemptAt ? { nextAttemptTime: timestampFromDate(a.nextAttemptAt) } : {}),
  });

/**
 * When a pending delivery is really sent: now while a worker holds it (its
 * next_attempt_at is the lease) or once due; else its next_attempt_at; never
 * before its subscription's pause ends, nor before its ordered head's next
 * attempt. Undefined when it is not pending.
 */
function sendsAt(d: Delivery, now: Date, pausedUntil?: Date | null, head?: OrderedHead | null): Date | undefined {
  if (d.status !== "pending" || !d.nextAttemptAt) return undefined;
  if (d.claimId) return now;
  const own = d.nextAttemptAt > now ? d.nextAttemptAt : now;
  const behindHead = waitsForHead(d, head ?? null, now);
  const at = behindHead && behindHead > own ? behindHead : own;
  return pausedUntil && pausedUntil > at ? pausedUntil : at;
}

const toDeliveryMessage = (d: Delivery, now: Date, pausedUntil?: Date | null, head?: OrderedHead | null) => {
  const next = sendsAt(d, now, pausedUntil, head);
  return create(DeliverySchema, {
    ...d,
    owner: { organisationId: d.organisationId, clientId: d.clientId },
    responseStatus: d.lastResponseStatus,
    error: d.lastError,
    ...(next ? { nextAttemptTime: timestampFromDate(next) } : {}),
    createTime: timestampFromDate(d.createdAt),
    updateTime: timestampFromDate(d.updatedAt),
  });
};

const positiveId = (field: string, value: bigint) => {
  if (value <= 0n) throw invalid(field, "expected a positive integer");
  return value;
};

export function createDeliveryService(deps: {
  orm: MikroORM;
  store: DeliveryStore;
  webhook: Client<typeof WebhookService>;
  onRetry: () => void;
}): ServiceImpl<typeof DeliveryService> {
  return {
    async listDeliveryAttempts(req) {
      const owner = readOwner(req.owner);
      positiveId("subscription_id", req.subscriptionId);
      const where = { ...owner, subscriptionId: Number(req.subscriptionId) };
      const page = await readPage(timeIdKeyset<DeliveryAttempt>("attemptedAt"), req, (after, options) =>
        deps.orm.em.fork().find(DeliveryAttemptEntity, { ...where, ...after }, options),
      );
      return { attempts: page.rows.map(toAttemptMessage), nextPageToken: page.nextPageToken };
    },

    async listDeliveries(req) {
      const owner = readOwner(req.owner);
      const subscriptionId = positiveId("subscription_id", req.subscriptionId);
      const page = await readPage(int64IdKeyset<Delivery>(), req, (after, options) =>
        deps.orm.em.fork().find(DeliveryEntity, { ...owner, subscriptionId, ...after }, options),
      );
      const now = new Date();
      const pending = page.rows.filter((d) => d.status === "pending");
      // The pause, and (only with pending ordered rows) the head they wait for: one statement each, in parallel.
      const [pausedUntil, head] = await Promise.all([
        pending.length > 0 ? deps.store.pausedUntil(subscriptionId) : undefined,
        pending.some((d) => d.ordered) ? readOrderedHead(deps.orm, subscriptionId) : null,
      ]);
      return {
        deliveries: page.rows.map((d) => toDeliveryMessage(d, now, pausedUntil, head)),
        nextPageToken: page.nextPageToken,
      };
    },

    async retryDelivery(req) {
      const owner = readOwner(req.owner);
      const subscriptionId = positiveId("subscription_id", req.subscriptionId);
      const id = positiveId("delivery_id", req.deliveryId);
      const retried = await deps.store.retryNow(owner, subscriptionId, id);
      if (retried === undefined) throw notFound("delivery");
      // The row as the retry left it, not read again: a worker woken by it may already hold it.
      const row = deps.orm.em.fork().map(DeliveryEntity, retried.row);
      if (row.status === "gone" || row.status === "cancelled") {
        throw new ConnectError("the delivery's subscription was deleted: nothing to send to", Code.FailedPrecondition);
      }
      deps.onRetry();
      return { delivery: toDeliveryMessage(row, retried.now, retried.pausedUntil, retried.orderedHead) };
    },

    async listFailedDeliveries(req) {
      const organisationId = req.organisationId ? requireUuid("organisation_id", req.organisationId) : undefined;
      const where = { status: "gave_up", ...(organisationId ? { organisationId } : {}) };
      const page = await readPage(int64IdKeyset<Delivery>(), req, (after, options) =>
        deps.orm.em.fork().find(DeliveryEntity, { ...where, ...after }, options),
      );
      const now = new Date();
      return { deliveries: page.rows.map((d) => toDeliveryMessage(d, now)), nextPageToken: page.nextPageToken };
    },

    recoverDeliveries: createRecovery(deps),
    getDeliveryStates: createDeliveryStates(deps),
  };
}
