// Disabling a subscription that only fails (the requirement: "A subscription that has
// failed every attempt for a configurable period is disabled, visibly").
//
// After each failed attempt the worker calls failed(delivery). The streak of a
// subscription is its attempts after the later of its last success and the
// last time its owner changed or re-enabled it; when every attempt of the
// streak failed, there are at least WEBHOOK_DISABLE_AFTER_FAILURES of them and
// the first is WEBHOOK_DISABLE_AFTER_FAILING_SECONDS old, the webhook service
// is asked to disable it (DisableSubscription, which refuses when the owner
// touched it since the streak began), and its waiting deliveries are
// cancelled: nothing more is sent until a PUT re-enables it.
//
// The check is one indexed SQL statement over the streak's attempts; a
// subscription whose streak is too young is not looked at again before it can
// be old enough. It never throws: a failed check is logged and tried again on
// the next failure.
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Logger } from "../../shared/logger.js";
import { webhookSubscriptionsDisabled } from "../../shared/metrics/metrics.js";

const S = `"delivery"`;
/** Subscriptions remembered per process (when to look again, since when enabled); the oldest are forgotten past it. */
const REMEMBERED = 10_000;

export interface FailureStreakOptions {
  orm: MikroORM;
  webhook: Client<typeof WebhookService>;
  logger: Logger;
  /** WEBHOOK_DISABLE_AFTER_FAILING_SECONDS; 0 never disables. */
  periodSeconds: number;
  /** WEBHOOK_DISABLE_AFTER_FAILURES. */
  minFailures: number;
}

/** What the check needs of the delivery whose attempt failed (a ClaimedDelivery has it). */
export interface FailedDelivery {
  organisationId: string;
  clientId: string;
  subscriptionId: bigint;
  /** The target's host, for the log line. */
  host?: string;
}

export interface Streak {
  failures: number;
  firstFailure: Date;
  lastError: string;
}

export interface FailureStreak {
  /** After a failed attempt of this delivery was recorded. */
  failed(d: FailedDelivery): Promise<void>;
}

export function createFailureStreak(options: FailureStreakOptions): FailureStreak {
  const { orm, webhook, logger, periodSeconds, minFailures } = options;
  const periodMs = periodSeconds * 1000;
  /** Per subscription: no look before `lookAt`; attempts before `since` are not counted (it was re-enabled then). */
  const remembered = new Map<string, { lookAt: number; since: Date | undefined }>();
  const remember = (key: string, value: { lookAt: number; since: Date | undefined }) => {
    remembered.delete(key);
    remembered.set(key, value);
    if (remembered.size > REMEMBERED) remembered.delete(remembered.keys().next().value!);
  };

  /** The streak: the failures after the last success (and after `since`); undefined when the last attempt succeeded. */
  async function readStreak(d: FailedDelivery, since: Date | undefined): Promise<Streak | undefined> {
    const [row] = await orm.em.fork().execute<{ n: number; first: Date | null; last_error: string | null }[]>(
      `with "owned" as (
         select "attempted_at", "outcome", "error" from ${S}."delivery_attempt"
          where "organisation_id" = ? and "client_id" = ? and "subscription_id" = ? and "attempted_at" > ?::timestamptz
       ), "success" as (
         select max("attempted_at") as "at" from "owned" where "outcome" = 'succeeded'
       )
       select count(*)::int as "n", min("attempted_at") as "first", (array_agg("error" order by "attempted_at" desc))[1] as "last_error"
         from "owned" where "outcome" in ('failed', 'gave_up') and "attempted_at" > coalesce((select "at" from "success"), '-infinity')`,
      [d.organisationId, d.clientId, d.subscriptionId.toString(), since ?? "-infinity"],
    );
    if (!row || row.n === 0 || !row.first) return undefined;
    return { failures: row.n, firstFailure: new Date(row.first), lastError: row.last_error ?? "" };
  }

  /** Its waiting deliveries are not sent (those a worker holds right now finish their attempt). */
  async function cancelWaiting(d: FailedDelivery): Promise<number> {
    const rows = await orm.em.fork().execute<{ id: string }[]>(
      `update ${S}."delivery" set "status" = 'cancelled', "next_attempt_at" = null, "last_error" = 'subscription disabled', "updated_at" = now()
        where "subscription_id" = ? and "organisation_id" = ? and "client_id" = ? and "status" = 'pending'
          and ("claim_id" is null or "next_attempt_at" <= now())
        returning "id"`,
      [d.subscriptionId.toString(), d.organisationId, d.clientId],
    );
    return rows.length;
  }

  async function check(d: FailedDelivery): Promise<void> {
    const key = `${d.organisationId} ${d.clientId} ${d.subscriptionId}`;
    const known = remembered.get(key);
    if (known && Date.now() < known.lookAt) return;
    const streak = await readStreak(d, known?.since);
    if (!streak) return;
    const oldEnoughAt = streak.firstFailure.getTime() + periodMs;
    if (Date.now() < oldEnoughAt) return remember(key, { lookAt: oldEnoughAt, since: known?.since });
    if (streak.failures < minFailures) return remember(key, { lookAt: 0, since: known?.since });

    const reason =
      `every delivery attempt since ${streak.firstFailure.toISOString()} failed (${streak.failures} attempts; the last: ${streak.lastError || "no answer"}); ` +
      `update the subscription (PUT) to enable it again`;
    let answer;
    try {
      answer = await webhook.disableSubscription({
        owner: { organisationId: d.organisationId, clientId: d.clientId },
        id: d.subscriptionId,
        failingSince: timestampFromDate(streak.firstFailure),
        reason,
      });
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.NotFound) return void remembered.delete(key); // deleted meanwhile
      throw err;
    }
    const subscription = answer.subscription!;
    if (subscription.disableTime) {
      const cancelled = await cancelWaiting(d);
      if (answer.disabled) {
        webhookSubscriptionsDisabled.inc();
        logger.warn(
          {
            subscriptionId: d.subscriptionId.toString(),
            organisationId: d.organisationId,
            clientId: d.clientId,
            host: d.host,
            failures: streak.failures,
            failingSince: streak.firstFailure.toISOString(),
            lastError: streak.lastError,
            cancelled,
          },
          "subscription disabled: every attempt failed",
        );
      }
      return void remembered.delete(key);
    }
    // Changed or re-enabled by its owner after the streak began: count from then.
    const since = subscription.updateTime ? timestampDate(subscription.updateTime) : undefined;
    remember(key, { lookAt: 0, since });
  }

  return {
    async failed(d) {
      if (periodSeconds <= 0) return;
      try {
        await check(d);
      } catch (err) {
        logger.warn(
          { err, subscriptionId: d.subscriptionId.toString() },
          "failure streak not checked; checked again on the next failure",
        );
      }
    },
  };
}
