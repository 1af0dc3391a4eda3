// The owner's subscription now or, once deleted, its recorded end: what
// subscriptionState needs besides the log. `missing`: the NOT_FOUND to answer
// when the log is empty too.
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
