// Throttling by the target: an answer that asks the client to wait (with
// Retry-After) pauses the whole subscription, not only the one delivery. The
// pause is written with the attempt (DeliveryStore.recordMany) and the claim
// passes over the subscription until it ends (delivery-claim.ts).
import type { SendResult } from "../sender/webhook-sender.js";

/**
 * RFC 6585 §4: "The 429 status code indicates that the user has sent too many
 * requests in a given amount of time ("rate limiting"). … The response
 * representations SHOULD include details explaining the condition, and MAY
 * include a Retry-After header indicating how long to wait before making a
 * new request."
 * RFC 9110 §15.6.4: "The 503 (Service Unavailable) status code indicates that
 * the server is currently unable to handle the request due to a temporary
 * overload or scheduled maintenance … The server MAY send a Retry-After
 * header field." 502 and 504 (a gateway in front of the target) are read the
 * same way when they carry Retry-After.
 */
const PAUSING_STATUSES = new Set([429, 502, 503, 504]);

export interface SubscriptionPauseAsked {
  until: Date;
  /** e.g. "HTTP 429 with Retry-After". */
  reason: string;
}

/** The pause an answer asks for (capped at retryAfterMaxSeconds); undefined: the answer pauses nothing. */
export function pauseAsked(result: SendResult, retryAfterMaxSeconds: number, now = Date.now()): SubscriptionPauseAsked | undefined {
  if (result.ok || result.retryAfterMs === undefined || !PAUSING_STATUSES.has(result.status)) return undefined;
  const waitMs = Math.min(result.retryAfterMs, retryAfterMaxSeconds * 1000);
  if (waitMs <= 0) return undefined;
  return { until: new Date(now + waitMs), reason: `HTTP ${result.status} with Retry-After` };
}
