// What the worker makes of an attempt's answer: the wait before its retry,
// its outcome label (metrics), and what its log line says (never the target
// URL's path, query or credentials).
import { withJitter } from "../../shared/loop/backoff.js";
import type { ClaimedDelivery } from "../deliveries/delivery-store.js";
import type { SendResult } from "../sender/webhook-sender.js";

/** The wait before retry n (1-based) with ±20 % jitter, at least the (capped) Retry-After; undefined: give up. */
export function retryDelayMs(
  schedule: number[],
  retry: number,
  retryAfterMs: number | undefined,
  retryAfterMaxSeconds: number,
): number | undefined {
  const base = schedule[retry - 1];
  if (base === undefined) return undefined;
  const jittered = withJitter(base * 1000, 0.2);
  const asked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, retryAfterMaxSeconds * 1000);
  return Math.round(Math.max(jittered, asked));
}

/** The outcome label of an attempt: succeeded, gone (410), timeout, refused (a destination the rules forbid), else failed. */
export function attemptOutcome(result: SendResult): string {
  if (result.ok) return "succeeded";
  if (result.status === 410) return "gone";
  return result.kind === "timeout" || result.kind === "refused" ? result.kind : "failed";
}

/** An attempt's log fields: the subscription, its owner, the target's host, the attempt and its answer. */
export function logFields(d: ClaimedDelivery, targetUrl: string, result: SendResult) {
  return {
    subscriptionId: d.subscriptionId.toString(),
    organisationId: d.organisationId,
    clientId: d.clientId,
    host: targetHost(targetUrl),
    deliveryId: d.id.toString(),
    eventId: d.eventId,
    attempt: d.attempt,
    status: result.status,
    durationMs: result.durationMs,
    ...(result.ok ? {} : { error: result.error }),
  };
}

/** host[:port] of a target URL; userinfo, path and query stay out of the logs. */
function targetHost(targetUrl: string): string {
  try {
    return new URL(targetUrl).host;
  } catch {
    return "(not a URL)";
  }
}
