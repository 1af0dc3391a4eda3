// The public JSON of the delivery log, one mapper for REST and the CLI: an
// attempt (what GET /oauth/webhooks/subscriptions/{id}/deliveries lists and
// `bizcard deliveries log --json` prints) and a delivery (what POST
// …/deliveries/{delivery_id}/retry answers and `bizcard deliveries retry
// --json` prints; `bizcard deliveries failed --json` adds its owner).
// snake_case, the REST names, numbers where REST has numbers, RFC 3339 times,
// null where nothing applies.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Delivery, DeliveryAttempt } from "../../gen/bizcard/delivery/v1/delivery_pb.js";

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);

/** One POST of one event to the subscription's target_url. */
export interface AttemptJson {
  /** The attempt (a UUID). */
  id: string;
  /** The delivery (one event for this subscription) it belongs to: what the retry route takes. */
  delivery_id: number;
  /** The event's id: the webhook-id header the receiver got, the same on every attempt. */
  event_id: string;
  event_type: string;
  /** 1 for the first POST of the delivery, 2 for its first retry, …; 0 for a skipped event (nothing sent). */
  attempt: number;
  /** The HTTP status the receiver answered; null when none came (timeout, refused, network error). */
  status_code: number | null;
  /** "succeeded", "failed" (retried at next_retry_at), "gave_up" (no retry left), "gone" (410: subscription deleted), "skipped" (subscription disabled), "cancelled" (due while the subscription was disabled or deleted: not sent). */
  outcome: string;
  /** null on success; else "HTTP <status>", "timeout: …", "refused: …" or "network: …". */
  error: string | null;
  duration_ms: number;
  attempted_at: string;
  /** When the next attempt of this delivery was planned after this one; null when none was. */
  next_retry_at: string | null;
}

export function attemptJson(a: DeliveryAttempt): AttemptJson {
  return {
    id: a.id,
    delivery_id: Number(a.deliveryId),
    event_id: a.eventId,
    event_type: a.eventType,
    attempt: a.attempt,
    status_code: a.responseStatus || null,
    outcome: a.outcome,
    error: a.error || null,
    duration_ms: a.durationMs,
    attempted_at: iso(a.attemptTime) ?? "",
    next_retry_at: iso(a.nextAttemptTime),
  };
}

/** One event for this subscription, across its attempts. */
export interface DeliveryJson {
  id: number;
  event_id: string;
  event_type: string;
  subscription_id: number;
  /** "pending", "succeeded", "gave_up", "gone", "cancelled" or "skipped" (the subscription was disabled). */
  status: string;
  /** Attempts made so far. */
  attempts: number;
  /** Of the last attempt. */
  status_code: number | null;
  error: string | null;
  /** While pending: when it is sent next (now when an attempt is under way; never before its subscription's pause ends). */
  next_retry_at: string | null;
  created_at: string;
  updated_at: string;
}

export function deliveryJson(d: Delivery): DeliveryJson {
  return {
    id: Number(d.id),
    event_id: d.eventId,
    event_type: d.eventType,
    subscription_id: Number(d.subscriptionId),
    status: d.status,
    attempts: d.attempts,
    status_code: d.responseStatus || null,
    error: d.error || null,
    next_retry_at: iso(d.nextAttemptTime),
    created_at: iso(d.createTime) ?? "",
    updated_at: iso(d.updateTime) ?? "",
  };
}

/** A delivery as operators list it (every owner's): the delivery and whose it is. */
export function ownedDeliveryJson(d: Delivery): DeliveryJson & { organisation_id: string; client_id: string } {
  return { ...deliveryJson(d), organisation_id: d.owner?.organisationId ?? "", client_id: d.owner?.clientId ?? "" };
}
