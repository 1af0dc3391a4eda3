// RecoverDeliveries: one new attempt for every delivery of a subscription
// since a time that failed, gave up, was cancelled or skipped.
//
// The subscription is read from the webhook service with the caller's owner
// (another owner's, or a deleted one, is NOT_FOUND as the webhook service
// answers it); a disabled one sends nothing, so recovering it would only
// cancel the rows again: FAILED_PRECONDITION until a PUT re-enables it.
//
// Then ONE statement: the finished rows (gave_up, cancelled, skipped) become
// pending with `once` (a single attempt, as RetryDelivery's of a finished
// delivery); the pending rows that have failed and wait for their retry (or
// whose worker died: claim lease over) are due now. A row a worker holds
// (lease running) is being sent already and is left alone; succeeded and
// gone (410: the subscription was deleted) are never recovered.
//
// Oldest first: the claim hands out a subscription's due rows by
// (next_attempt_at, id). Each recovered row is due since its event came
// (next_attempt_at = created_at, as the fan-out wrote it for a new row), so
// the recovered rows and the subscription's new rows waiting to be sent go
// in the order their events came (created_at, then id, both in fan-out order),
// not recovered rows behind newer ones. A time in the past is "due now": the
// delivery's answer shows it as now (delivery-service.ts sendsAt).
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type {
  RecoverDeliveriesRequest,
  RecoverDeliveriesResponseSchema,
} from "../../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { readOwner, type Pair } from "../../shared/owner.js";
import { invalid } from "../../shared/validation.js";

const S = `"delivery"`;

export interface RecoveryDeps {
  orm: MikroORM;
  webhook: Client<typeof WebhookService>;
  /** Deliveries are due: wake this process's workers. */
  onRetry: () => void;
}

/** The one statement: how many rows it made due. */
export async function recoverSince(orm: MikroORM, owner: Pair, subscriptionId: bigint, since: Date): Promise<number> {
  const [row] = await orm.em.fork().execute<{ n: number }[]>(
    `with "recovered" as (
       update ${S}."delivery" d
          set "status" = 'pending', "once" = case when d."status" = 'pending' then d."once" else true end, "next_attempt_at" = d."created_at", "claim_id" = null, "updated_at" = now()
        where d."subscription_id" = ? and d."organisation_id" = ? and d."client_id" = ? and d."created_at" >= ?
          and (d."status" in ('gave_up', 'cancelled', 'skipped')
            or (d."status" = 'pending' and d."attempts" > 0 and (d."claim_id" is null or d."next_attempt_at" <= now())))
       returning 1
     )
     select count(*)::int as "n" from "recovered"`,
    [subscriptionId.toString(), owner.organisationId, owner.clientId, since],
  );
  return row?.n ?? 0;
}

export function createRecovery(
  deps: RecoveryDeps,
): (req: RecoverDeliveriesRequest) => Promise<MessageInitShape<typeof RecoverDeliveriesResponseSchema>> {
  return async (req) => {
    const owner = readOwner(req.owner);
    if (req.subscriptionId <= 0n) throw invalid("subscription_id", "expected a positive integer");
    if (!req.since) throw invalid("since", "required");
    const since = timestampDate(req.since);
    if (since.getTime() > Date.now())
      throw invalid(
        "since",
        `${since.toISOString()} is in the future; recovery queues deliveries created at or after it`,
      );
    // NOT_FOUND for another owner's subscription or a deleted one, as the webhook service answers.
    const { subscription } = await deps.webhook.getSubscription({ owner, id: req.subscriptionId });
    if (subscription?.disableTime) {
      throw new ConnectError(
        `subscription ${req.subscriptionId} is disabled: it would be sent nothing; re-enable it first (PUT), then recover`,
        Code.FailedPrecondition,
      );
    }
    const queuedCount = await recoverSince(deps.orm, owner, req.subscriptionId, since);
    if (queuedCount > 0) deps.onRetry();
    return { queuedCount };
  };
}
