// Throttling by the target: an answer with Retry-After pauses the whole
// subscription; a 503 without one, or a run of timeouts, halves its in-flight
// cap, which grows back by one per success (AIMD). Recorded with the attempt
// (attempt-record.ts); the claim reads it (delivery-claim.ts).
import type { SendResult } from "../sender/webhook-sender.js";

/**
 * RFC 6585 §4: 429 "MAY include a Retry-After header indicating how long to
 * wait before making a new request." RFC 9110 §15.6.4: for 503 "The server MAY
 * send a Retry-After header field." 502 and 504 (a gateway) are read the same way.
 */
const PAUSING_STATUSES = new Set([429, 502, 503, 504]);

/**
 * Timeouts in a row that halve the in-flight cap, as a 503 does: one or two can
 * be a slow request, three are the target. Any HTTP answer ends a run; a
 * network error neither counts nor ends it.
 */
export const TIMEOUT_RUN_HALVES_CAP = 3;

/** What an answer asks of its whole subscription: nothing sent before pausedUntil, or its in-flight cap halved. */
export type Throttle = { pausedUntil?: Date; halveCap?: boolean; reason: string };

/** The throttle an answer asks for (a pause capped at retryAfterMaxSeconds); undefined: it throttles nothing. */
export function throttleAsked(
  result: SendResult,
  retryAfterMaxSeconds: number,
  now = Date.now(),
): Throttle | undefined {
  if (result.ok) return undefined;
  if (result.retryAfterMs === undefined) {
    return result.status === 503 ? { halveCap: true, reason: "HTTP 503 without Retry-After" } : undefined;
  }
  if (!PAUSING_STATUSES.has(result.status)) return undefined;
  const waitMs = Math.min(result.retryAfterMs, retryAfterMaxSeconds * 1000);
  if (waitMs <= 0) return undefined;
  return { pausedUntil: new Date(now + waitMs), reason: `HTTP ${result.status} with Retry-After` };
}
