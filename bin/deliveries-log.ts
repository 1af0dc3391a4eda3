// `bizcard deliveries log`: a subscription's delivery log, newest first, and
// whether it is active, disabled or deleted and why, as its owner reads it
// over REST (GET /oauth/webhooks/subscriptions/{id}/deliveries). It answers
// for a deleted subscription too while its log is kept.
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import type { Subscription, WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { subscriptionState } from "../services/delivery/subscription-state.js";
import { attemptJson } from "../services/shared/delivery-json.js";

export async function deliveriesLog(
  args: { organisationId: string; clientId: string; subscriptionId: bigint; limit: number },
  deliveries: Client<typeof DeliveryService>,
  webhook: Client<typeof WebhookService>,
): Promise<{ json: unknown; text: string }> {
  const owner = { organisationId: args.organisationId, clientId: args.clientId };
  let subscription: Subscription | undefined;
  let missing: unknown;
  try {
    subscription = (await webhook.getSubscription({ owner, id: args.subscriptionId })).subscription;
  } catch (err) {
    if (!(err instanceof ConnectError && err.code === Code.NotFound)) throw err;
    missing = err;
  }
  const res = await deliveries.listDeliveryAttempts({ owner, subscriptionId: args.subscriptionId, pageSize: args.limit });
  const state = subscriptionState(subscription, res.attempts[0]);
  if (!state) throw missing;
  const attempts = res.attempts.map(attemptJson);
  const head = `subscription ${args.subscriptionId} (${state.state})${state.reason ? `: ${state.reason}` : ""}`;
  const lines = attempts.map(
    (a) =>
      `${a.attempted_at}  delivery ${a.delivery_id} attempt ${a.attempt}  ${a.outcome}  ${a.error ?? a.status_code ?? ""}` +
      `${a.next_retry_at ? `  next retry ${a.next_retry_at}` : ""}`,
  );
  return { json: { subscription_id: args.subscriptionId.toString(), state: state.state, reason: state.reason, attempts }, text: [head, ...lines].join("\n") };
}
