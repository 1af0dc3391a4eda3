// The public JSON of one delivery attempt: what GET
// /oauth/webhooks/subscriptions/{id}/deliveries lists and what `bizcard
// deliveries log --json` prints. snake_case, RFC 3339 times, null where
// nothing applies.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { DeliveryAttempt } from "../../gen/bizcard/delivery/v1/delivery_pb.js";

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
  /** 1 for the first POST of the delivery, 2 for its first retry, … */
  attempt: number;
  /** The HTTP status the receiver answered; null when none came (timeout, refused, network error). */
  status_code: number | null;
  /** "succeeded", "failed" (retried at next_retry_at), "gave_up" (no retry left), "gone" (410: subscription deleted). */
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
