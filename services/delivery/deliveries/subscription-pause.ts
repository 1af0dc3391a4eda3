// Throttling by the target: an answer that asks the client to wait (with
// Retry-After) pauses the whole subscription, not only the one delivery; a
// 503 without one halves the subscription's in-flight cap, which grows back
// by one per success (additive increase, multiplicative decrease); a run of
// TIMEOUT_RUN_HALVES_CAP timeouts halves it as well. Written
// with the attempt (DeliveryStore.recordMany); the claim reads it
// (delivery-claim.ts).
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

/**
 * Timeouts in a row (no HTTP answer in between) that halve a subscription's
 * in-flight cap, as a 503 without Retry-After does: a target that stops
 * answering is overloaded too. 3: one timeout (or two) can be one slow
 * request; three in a row, with no answer between them, are the target. The
 * run starts again at 0 after it halves the cap, and any HTTP answer (2xx or
 * not) ends it; a network error (refused, reset) neither counts nor ends it.
 */
export const TIMEOUT_RUN_HALVES_CAP = 3;

/** What an answer asks of its whole subscription. */
export interface Throttle {
  /** Nothing of the subscription is sent before then. */
  pausedUntil?: Date;
  /** The subscription's in-flight cap is halved. */
  halveCap?: boolean;
  /** e.g. "HTTP 429 with Retry-After". */
  reason: string;
}

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
