// The owner's subscription as the webhook service has it now, or, once it is
// deleted, the end it recorded (who, why, when): what subscriptionState needs
// besides the delivery log. `missing` is the NOT_FOUND to answer when the log
// is empty too. The REST delivery log and `bizcard deliveries log` both ask.
import { Code, ConnectError, type CallOptions, type Client } from "@connectrpc/connect";
import type { Owner, Subscription, SubscriptionEnd, WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";

const isNotFound = (err: unknown): err is ConnectError => err instanceof ConnectError && err.code === Code.NotFound;

export async function subscriptionOrEnd(
  webhook: Client<typeof WebhookService>,
  owner: Pick<Owner, "organisationId" | "clientId">,
  id: bigint,
  options?: CallOptions,
): Promise<{ subscription?: Subscription; end?: SubscriptionEnd; missing?: ConnectError }> {
  try {
    return { subscription: (await webhook.getSubscription({ owner, id }, options)).subscription };
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      return { end: (await webhook.getSubscriptionEnd({ owner, id }, options)).end, missing: err };
    } catch (endErr) {
      if (!isNotFound(endErr)) throw endErr;
      return { missing: err };
    }
  }
}
