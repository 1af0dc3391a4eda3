// The public JSON of the delivery log, one mapper for REST and the CLI's
// --json: an attempt (one POST) and a delivery (one event, across its
// attempts). Fields are documented in schemas/subscriptions.ts.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Delivery, DeliveryAttempt } from "../../gen/bizcard/delivery/v1/delivery_pb.js";

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);

export function attemptJson(a: DeliveryAttempt) {
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

export type AttemptJson = ReturnType<typeof attemptJson>;

export function deliveryJson(d: Delivery) {
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
export function ownedDeliveryJson(d: Delivery) {
  return { ...deliveryJson(d), organisation_id: d.owner?.organisationId ?? "", client_id: d.owner?.clientId ?? "" };
}
