// `bizcard deliveries log`: a subscription's delivery log, newest first, and
// whether it is active, disabled or deleted and why, as its owner reads it
// over REST (GET /oauth/webhooks/subscriptions/{id}/deliveries). It answers
// for a deleted subscription too while its log or its recorded end is kept.
import type { Client } from "@connectrpc/connect";
import type { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import { subscriptionOrEnd } from "../services/delivery/subscription-or-end.js";
import { subscriptionState } from "../services/delivery/subscription-state.js";
import { attemptJson } from "../gateway/routes/delivery-json.js";

export async function deliveriesLog(
  args: { organisationId: string; clientId: string; subscriptionId: bigint; limit: number },
  deliveries: Client<typeof DeliveryService>,
  webhook: Client<typeof WebhookService>,
): Promise<{ json: unknown; text: string }> {
  const owner = { organisationId: args.organisationId, clientId: args.clientId };
  const { subscription, end, missing } = await subscriptionOrEnd(webhook, owner, args.subscriptionId);
  const res = await deliveries.listDeliveryAttempts({
    owner,
    subscriptionId: args.subscriptionId,
    pageSize: args.limit,
  });
  const state = subscriptionState(subscription, res.attempts[0], end);
  if (!state) throw missing;
  const attempts = res.attempts.map(attemptJson);
  const head = `subscription ${args.subscriptionId} (${state.state})${state.reason ? `: ${state.reason}` : ""}`;
  const lines = attempts.map(
    (a) =>
      `${a.attempted_at}  delivery ${a.delivery_id} attempt ${a.attempt}  ${a.outcome}  ${a.error ?? a.status_code ?? ""}` +
      `${a.next_retry_at ? `  next retry ${a.next_retry_at}` : ""}`,
  );
  return {
    json: { subscription_id: Number(args.subscriptionId), state: state.state, reason: state.reason, attempts },
    text: [head, ...lines].join("\n"),
  };
}
