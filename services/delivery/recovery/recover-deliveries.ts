// RecoverDeliveries: one new attempt for every delivery of a subscription
// since a time that failed, gave up, was cancelled or skipped. A disabled
// subscription would only cancel them again: FAILED_PRECONDITION.
//
// ONE statement: finished rows (gave_up, cancelled, skipped) become pending
// with `once`; failed pending rows waiting for their retry are due now; a row
// a worker holds is left alone. Each is due since its event came
// (next_attempt_at = created_at), so recovered and new rows go in event order.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { RecoverDeliveriesRequest } from "../../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { readOwner, type Pair } from "../../shared/owner.js";
import { invalid } from "../../shared/validation.js";

const S = `"delivery"`;

interface RecoveryDeps {
  orm: MikroORM;
  webhook: Client<typeof WebhookService>;
  /** Deliveries are due: wake this process's workers. */
  onRetry: () => void;
}

/** The one statement: how many rows it made due. */
async function recoverSince(orm: MikroORM, owner: Pair, subscriptionId: bigint, since: Date): Promise<number> {
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

export function createRecovery(deps: RecoveryDeps) {
  return async (req: RecoverDeliveriesRequest) => {
    const owner = readOwner(req.owner);
    if (req.subscriptionId <= 0n) throw invalid("subscription_id", "expected a positive integer");
    if (!req.since) throw invalid("since", "required");
    const since = timestampDate(req.since);
    const future = `${since.toISOString()} is in the future; recovery queues deliveries created at or after it`;
    if (since.getTime() > Date.now()) throw invalid("since", future);
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
