// "A subscription that has failed every attempt for a configurable period is
// disabled, visibly." The streak is a subscription's failed attempts since its
// last success (or its owner's last change); once it has
// WEBHOOK_DISABLE_AFTER_FAILURES and is WEBHOOK_DISABLE_AFTER_FAILING_SECONDS
// old, the webhook service disables it (unless its owner touched it since) and
// its waiting deliveries are cancelled. A failed check is logged, never thrown.
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Logger } from "../../shared/logger.js";
import type { ClaimedDelivery, DeliveryStore } from "./delivery-store.js";
import { webhookSubscriptionsDisabled } from "../../shared/metrics/metrics.js";

const S = `"delivery"`;
/** Subscriptions remembered per process (when to look again, since when enabled); the oldest are forgotten past it. */
const REMEMBERED = 10_000;

interface FailureStreakOptions {
  orm: MikroORM;
  store: Pick<DeliveryStore, "cancelSubscription">;
  webhook: Client<typeof WebhookService>;
  logger: Logger;
  /** WEBHOOK_DISABLE_AFTER_FAILING_SECONDS; 0 never disables. */
  periodSeconds: number;
  /** WEBHOOK_DISABLE_AFTER_FAILURES. */
  minFailures: number;
}

/** The delivery whose attempt failed; `host`: its target's, for the log line. */
type FailedDelivery = Pick<ClaimedDelivery, "organisationId" | "clientId" | "subscriptionId"> & { host?: string };

type Memory = { lookAt: number; since: Date | undefined };

/** `failed`: after a failed attempt of this delivery was recorded. */
export function createFailureStreak(options: FailureStreakOptions): { failed(d: FailedDelivery): Promise<void> } {
  const { orm, store, webhook, logger, periodSeconds, minFailures } = options;
  const periodMs = periodSeconds * 1000;
  /** Per subscription: no look before `lookAt`; attempts before `since` are not counted (it was re-enabled then). */
  const remembered = new Map<string, Memory>();
  const remember = (key: string, value: Memory) => {
    remembered.delete(key);
    remembered.set(key, value);
    if (remembered.size > REMEMBERED) remembered.delete(remembered.keys().next().value!);
  };

  /** The streak: the failures after the last success (and after `since`); undefined when the last attempt succeeded. */
  async function readStreak(d: FailedDelivery, since: Date | undefined) {
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
      const cancelled = await store.cancelSubscription(d.subscriptionId, "subscription disabled");
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
