// Why a subscription stopped receiving, told from what remains: the
// subscription as the webhook service has it now (or nothing: deleted) and
// the newest attempt of its delivery log, which the delivery service keeps
// after the subscription is deleted (until DELIVERY_LOG_RETENTION_DAYS prunes
// it). The REST delivery log and `bizcard deliveries log` both answer it.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { DeliveryAttempt } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { Subscription } from "../../gen/bizcard/webhook/v1/webhook_pb.js";

export interface SubscriptionState {
  /** active: receives events; disabled: every attempt failed for a while (a PUT enables it); deleted. */
  state: "active" | "disabled" | "deleted";
  /** In words, for the client's developer; null for an active subscription whose last delivery did not give up. */
  reason: string | null;
}

/**
 * undefined: no subscription and no delivery log either (never the caller's,
 * or pruned): the caller answers 404.
 */
export function subscriptionState(subscription: Subscription | undefined, newest: DeliveryAttempt | undefined): SubscriptionState | undefined {
  const at = newest?.attemptTime ? timestampDate(newest.attemptTime).toISOString() : "";
  if (subscription) {
    if (subscription.disableTime) {
      const since = timestampDate(subscription.disableTime).toISOString();
      return { state: "disabled", reason: `disabled at ${since}: ${subscription.disabledReason || "every delivery attempt failed"}` };
    }
    if (newest?.outcome === "gave_up") return { state: "active", reason: `the last delivery gave up at ${at}: every retry failed (the last: ${newest.error || "no answer"})` };
    return { state: "active", reason: null };
  }
  if (!newest) return undefined;
  if (newest.outcome === "gone") return { state: "deleted", reason: `deleted at ${at}: the target answered 410 Gone (it asked for no more events)` };
  return { state: "deleted", reason: "deleted by its owner (DELETE), or when the application's access to the organisation was revoked" };
}

/** A header value: printable ASCII only. */
export function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}
