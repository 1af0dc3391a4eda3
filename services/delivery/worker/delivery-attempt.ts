// One delivery attempt (delivery-worker.ts): the POST in the event's trace and
// what its answer means: succeeded; gone (410: the subscription is deleted,
// with its queue); or failed, retried on the schedule or given up, the
// subscription throttled when the target asked to wait. Its log lines never
// show the target URL's path, query or credentials.
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { SubscriptionEndReason, type Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Logger } from "../../shared/logger.js";
import { webhookAttemptDuration, webhookAttempts, webhookGivenUp } from "../../shared/metrics/metrics.js";
import { runInRequest } from "../../shared/request-context.js";
import { startSpan } from "../../shared/trace/tracing.js";
import type { AttemptRecord, ClaimedDelivery, DeliveryStore } from "../deliveries/delivery-store.js";
import { throttleAsked } from "../deliveries/subscription-pause.js";
import { signingSecrets, type SendResult, type WebhookSender } from "../sender/webhook-sender.js";
import { withJitter } from "../../shared/loop/backoff.js";

export interface AttemptOptions {
  store: DeliveryStore;
  webhook: Client<typeof WebhookService>;
  sender: WebhookSender;
  logger: Logger;
  /** Seconds before each retry (DELIVERY_RETRY_SCHEDULE_SECONDS). */
  schedule: number[];
  retryAfterMaxSeconds: number;
  /** Disables a subscription that only fails (failure-streak.ts); never throws. */
  failureStreak?: { failed(d: ClaimedDelivery & { host?: string }): Promise<void> };
}

type Trace = { traceparent: string; tracestate?: string };

export class DeliveryAttempts {
  /** `record`: records an attempt with the delivery's next state (the worker's batches). */
  constructor(
    private readonly options: AttemptOptions,
    private readonly record: (record: AttemptRecord) => Promise<void>,
  ) {}

  /**
   * The attempt is a span of the event's trace (a new one without): the POST's traceparent, the log lines' trace id.
   */
  deliver(d: ClaimedDelivery, subscriber: Subscriber): Promise<void> {
    const span = startSpan("webhook POST", d.traceparent, "client", {
      "http.request.method": "POST",
      "webhook.event_id": d.eventId,
      "webhook.attempt": d.attempt,
    });
    const trace = { traceparent: span.traceparent, ...(d.tracestate ? { tracestate: d.tracestate } : {}) };
    return runInRequest({ requestId: `delivery:${d.id}`, ...trace }, () => this.attempt(d, subscriber, trace)).then(
      (result) => span.end(result.ok ? undefined : result.error, { "http.response.status_code": result.status }),
      (err: unknown) => {
        span.end(err);
        throw err;
      },
    );
  }

  private async attempt(d: ClaimedDelivery, subscriber: Subscriber, trace: Trace): Promise<SendResult> {
    const attemptedAt = new Date();
    const result = await this.options.sender.send({
      url: subscriber.targetUrl,
      ...signingSecrets(subscriber),
      eventId: d.eventId,
      body: d.body,
      ...trace,
    });
    const base = {
      delivery: d,
      responseStatus: result.status,
      durationMs: result.durationMs,
      attemptedAt,
      timedOut: !result.ok && result.kind === "timeout",
    };
    webhookAttempts.inc({ outcome: attemptOutcome(result) });
    webhookAttemptDuration.observe(result.durationMs / 1000);
    const fields = logFields(d, subscriber.targetUrl, result);
    if (result.ok) {
      await this.record({ ...base, status: "succeeded", outcome: "succeeded", error: "", nextAttemptAt: null });
      this.options.logger.debug(fields, "delivery succeeded");
      return result;
    }
    // REST Hooks: 410 Gone means the receiver wants no more events: the subscription is deleted.
    if (result.status === 410 && (await this.deleteSubscription(d))) {
      await this.options.store.record({
        ...base,
        status: "gone",
        outcome: "gone",
        error: "HTTP 410: subscription deleted",
        nextAttemptAt: null,
      });
      await this.options.store.cancelSubscription(d.subscriptionId);
      this.options.logger.info(fields, "subscription deleted: the receiver answered 410 Gone");
      return result;
    }
    const wait = d.once ? undefined : retryDelayMs(this.options, d.attempt, result.retryAfterMs);
    // The target asked to wait, or is overloaded: the whole subscription is throttled (recorded with the attempt).
    const throttle = throttleAsked(result, this.options.retryAfterMaxSeconds);
    if (throttle)
      this.options.logger.info(
        { ...fields, pausedUntil: throttle.pausedUntil?.toISOString(), reason: throttle.reason },
        "subscription throttled",
      );
    // Not before the subscription's pause ends.
    const nextAttemptAt =
      wait === undefined ? null : new Date(Math.max(Date.now() + wait, throttle?.pausedUntil?.getTime() ?? 0));
    if (!nextAttemptAt) webhookGivenUp.inc();
    await this.record({
      ...base,
      ...(throttle ? { throttle } : {}),
      status: nextAttemptAt ? "pending" : "gave_up",
      outcome: nextAttemptAt ? "failed" : "gave_up",
      error: result.error,
      nextAttemptAt,
    });
    if (nextAttemptAt)
      this.options.logger.info(
        { ...fields, nextRetryAt: nextAttemptAt.toISOString(), retryInMs: wait },
        "delivery attempt failed; retried",
      );
    else
      this.options.logger.warn(
        fields,
        d.once ? "delivery failed; a manual retry is tried once" : "delivery gave up: every retry failed",
      );
    await this.options.failureStreak?.failed({ ...d, host: fields.host });
    return result;
  }

  /** True once the subscription is gone (deleted now, or already). */
  private async deleteSubscription(d: ClaimedDelivery): Promise<boolean> {
    try {
      const owner = { organisationId: d.organisationId, clientId: d.clientId };
      const reason = SubscriptionEndReason.GONE;
      await this.options.webhook.deleteSubscription({ owner, id: d.subscriptionId, reason });
      return true;
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return true;
      this.options.logger.warn(
        { err, subscriptionId: d.subscriptionId.toString() },
        "410 answered but the subscription could not be deleted; retried",
      );
      return false;
    }
  }
}

/** The wait before retry n (1-based) with ±20 % jitter, at least the (capped) Retry-After; undefined: give up. */
function retryDelayMs(o: AttemptOptions, retry: number, retryAfterMs?: number) {
  const base = o.schedule[retry - 1];
  if (base === undefined) return undefined;
  const jittered = withJitter(base * 1000, 0.2);
  const asked = retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, o.retryAfterMaxSeconds * 1000);
  return Math.round(Math.max(jittered, asked));
}

/**
 * The outcome label of an attempt: succeeded, gone (410), timeout,
 * refused (a destination the rules forbid), else failed.
 */
function attemptOutcome(result: SendResult): string {
  if (result.ok) return "succeeded";
  if (result.status === 410) return "gone";
  return result.kind === "timeout" || result.kind === "refused" ? result.kind : "failed";
}

/** An attempt's log fields: the subscription, its owner, the target's host, the attempt and its answer. */
function logFields(d: ClaimedDelivery, targetUrl: string, result: SendResult) {
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
