// The subscription's JSON (REST and the MCP tools), and what the delivery
// service knows of it (GetDeliveryStates): a pause its target asked for
// (throttled_until), a cap its target's answers lowered (in_flight_cap) and
// an ordered subscription's blocked head
// (blocked_since, blocked_delivery_id).
//
// Reading a subscription does not fail when the delivery service cannot
// answer: those fields are then null (as for a subscription with
// nothing to show) and the gateway logs a warning. The subscription itself is
// the webhook service's; its delivery state is a hint that comes and goes
// within seconds, and a dashboard listing subscriptions should not go down
// with the delivery service.
import type { Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyBaseLogger } from "fastify";
import type { DeliveryService, SubscriptionDeliveryState } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { Owner, Subscription } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { KnownEventType } from "../../services/shared/event-types.js";
import { nameOfEventType } from "../../services/shared/event-types.js";

export interface SubscriptionJson {
  id: number;
  target_url: string;
  event_type: string;
  created_at: string;
  updated_at: string;
  /** Set while disabled (every delivery attempt failed for a while); a PUT re-enables it. */
  disabled_at: string | null;
  disabled_reason: string | null;
  /** Ordered delivery: one at a time, in commit order. */
  ordered: boolean;
  /** Set while a rotated-out secret still signs: until when. */
  previous_secret_expires_at: string | null;
  /** Set while its target asked for a pause (429/503 … with Retry-After). */
  throttled_until: string | null;
  /** Set while its target's answers (502/503/504 without Retry-After, a run of timeouts) lowered its cap: the most POSTs in flight to it now. */
  in_flight_cap: number | null;
  /** Ordered subscriptions: set while a failing head blocks those behind it. */
  blocked_since: string | null;
  blocked_delivery_id: number | null;
}

/** The subscription as REST and the MCP tools show it, with what the delivery service knows of it (none: nothing to show, or it could not be read). */
export function subscriptionJson(s: Subscription, state?: SubscriptionDeliveryState): SubscriptionJson {
  return {
    id: Number(s.id),
    target_url: s.targetUrl,
    event_type: nameOfEventType(s.eventType as KnownEventType),
    created_at: s.createTime ? timestampDate(s.createTime).toISOString() : "",
    updated_at: s.updateTime ? timestampDate(s.updateTime).toISOString() : "",
    disabled_at: s.disableTime ? timestampDate(s.disableTime).toISOString() : null,
    disabled_reason: s.disableTime ? s.disabledReason : null,
    ordered: s.ordered,
    previous_secret_expires_at: s.previousSecretExpireTime
      ? timestampDate(s.previousSecretExpireTime).toISOString()
      : null,
    throttled_until: state?.throttledUntil ? timestampDate(state.throttledUntil).toISOString() : null,
    in_flight_cap: state && state.inFlightCap > 0 ? state.inFlightCap : null,
    blocked_since: state?.blockedSince ? timestampDate(state.blockedSince).toISOString() : null,
    blocked_delivery_id: state?.blockedSince && state.blockedDeliveryId > 0n ? Number(state.blockedDeliveryId) : null,
  };
}

/** The delivery states of these subscriptions of the owner, by id; none (and a warning) when the delivery service cannot answer. */
export async function deliveryStates(
  delivery: Client<typeof DeliveryService>,
  owner: Pick<Owner, "organisationId" | "clientId">,
  ids: bigint[],
  rpc: { headers: Record<string, string> },
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
  owner: Pick<Owner, "organisationId" | "clientId">,
  subscriptions: Subscription[],
  rpc: { headers: Record<string, string> },
  log: FastifyBaseLogger,
): Promise<SubscriptionJson[]> {
  const states = await deliveryStates(
    delivery,
    owner,
    subscriptions.map((s) => s.id),
    rpc,
    log,
  );
  return subscriptions.map((s) => subscriptionJson(s, states.get(s.id)));
}
