// Why a subscription stopped receiving, told from what remains: the
// subscription now, or the end recorded when it was deleted
// (GetSubscriptionEnd), and the newest attempt of its delivery log; without a
// recorded end, the reason is guessed from the log. The REST delivery log and
// `bizcard deliveries log` both answer it.
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { DeliveryAttempt } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { SubscriptionEndReason } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Subscription, SubscriptionEnd } from "../../gen/bizcard/webhook/v1/webhook_pb.js";

export interface SubscriptionState {
  /** active: receives events; disabled: every attempt failed for a while (a PUT enables it); deleted. */
  state: "active" | "disabled" | "deleted";
  /** In words, for the client's developer; null for an active subscription whose last delivery did not give up. */
  reason: string | null;
}

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : "");

/** The recorded end, in words. */
function endReason(end: SubscriptionEnd): string {
  const at = iso(end.endTime);
  switch (end.reason) {
    case SubscriptionEndReason.GRANT_REVOKED:
      return `deleted at ${at}: the application's access to the organisation was revoked`;
    case SubscriptionEndReason.GONE:
      return `deleted at ${at}: the target answered 410 Gone (it asked for no more events)`;
    default:
      return `deleted at ${at} by its owner (DELETE)`;
  }
}

/**
 * undefined: no subscription, no recorded end and no delivery log either
 * (never the caller's, or pruned): the caller answers 404.
 */
export function subscriptionState(
  subscription: Subscription | undefined,
  newest: DeliveryAttempt | undefined,
  end?: SubscriptionEnd,
): SubscriptionState | undefined {
  const at = iso(newest?.attemptTime);
  if (subscription) {
    const why = subscription.disabledReason || "every delivery attempt failed";
    if (subscription.disableTime)
      return { state: "disabled", reason: `disabled at ${iso(subscription.disableTime)}: ${why}` };
    const gaveUp = `the last delivery gave up at ${at}: every retry failed (the last: ${newest?.error || "no answer"})`;
    return { state: "active", reason: newest?.outcome === "gave_up" ? gaveUp : null };
  }
  if (end) return { state: "deleted", reason: endReason(end) };
  if (!newest) return undefined;
  // Deleted without a recorded end: what the log tells.
  if (newest.outcome === "gone")
    return { state: "deleted", reason: `deleted at ${at}: the target answered 410 Gone (it asked for no more events)` };
  return {
    state: "deleted",
    reason: "deleted by its owner (DELETE), or when the application's access to the organisation was revoked",
  };
}

/** A header value: printable ASCII only. */
export function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}
