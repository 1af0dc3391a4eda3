// The subscription's JSON (REST and the MCP tools), with its delivery state:
// a pause its target asked for, a lowered in-flight cap, a blocked ordered
// head. When the delivery service cannot answer, those are null and a warning
// is logged: a hint that comes and goes must not take a dashboard down.
import type { Client } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FastifyBaseLogger } from "fastify";
import type { DeliveryService, SubscriptionDeliveryState } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { Owner, Subscription } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { nameOfEventType, type KnownEventType } from "../../services/shared/event-types.js";

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);

/** The subscription as REST shows it; `state` undefined: nothing to show, or it could not be read. */
export function subscriptionJson(s: Subscription, state?: SubscriptionDeliveryState) {
  return {
    id: Number(s.id),
    target_url: s.targetUrl,
    event_type: nameOfEventType(s.eventType as KnownEventType),
    created_at: iso(s.createTime) ?? "",
    updated_at: iso(s.updateTime) ?? "",
    disabled_at: iso(s.disableTime),
    disabled_reason: s.disableTime ? s.disabledReason : null,
    ordered: s.ordered,
    previous_secret_expires_at: iso(s.previousSecretExpireTime),
    throttled_until: iso(state?.throttledUntil),
    in_flight_cap: state && state.inFlightCap > 0 ? state.inFlightCap : null,
    blocked_since: iso(state?.blockedSince),
    blocked_delivery_id: state?.blockedSince && state.blockedDeliveryId > 0n ? Number(state.blockedDeliveryId) : null,
  };
}

type StatesOwner = Pick<Owner, "organisationId" | "clientId">;
type Rpc = { headers: Record<string, string> };

/** The delivery states of the owner's subscriptions, by id; none (and a warning) when they cannot be read. */
export async function deliveryStates(
  delivery: Client<typeof DeliveryService>,
  owner: StatesOwner,
  ids: bigint[],
  rpc: Rpc,
  log: FastifyBaseLogger,
): Promise<Map<bigint, SubscriptionDeliveryState>> {
  if (ids.length === 0) return new Map();
  try {
    const res = await delivery.getDeliveryStates({ owner, subscriptionIds: ids }, rpc);
    return new Map(res.states.map((s) => [s.subscriptionId, s]));
  } catch (err) {
    log.warn(
      { err, subscriptions: ids.length },
      "delivery states could not be read: throttled_until, in_flight_cap, blocked_since and blocked_delivery_id answered null",
    );
    return new Map();
  }
}

/** A page of subscriptions with their delivery states (one GetDeliveryStates for the page). */
export async function subscriptionsJson(
  delivery: Client<typeof DeliveryService>,
  owner: StatesOwner,
  subscriptions: Subscription[],
  rpc: Rpc,
  log: FastifyBaseLogger,
) {
  const ids = subscriptions.map((s) => s.id);
  const states = await deliveryStates(delivery, owner, ids, rpc, log);
  return subscriptions.map((s) => subscriptionJson(s, states.get(s.id)));
}
