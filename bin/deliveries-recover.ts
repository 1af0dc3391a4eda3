// `bizcard deliveries recover`: after an outage of a subscription's receiver,
// one new attempt for every delivery since a time that gave up, was cancelled,
// or was skipped while the subscription was disabled, oldest first, over the
// delivery service's RecoverDeliveries. Its JSON is what
// POST /oauth/webhooks/subscriptions/{id}/recover answers, same names and types.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { z } from "zod";
import type { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import type { RecoveredJson } from "../gateway/routes/subscription-recover.js";

const RFC3339 = z.iso.datetime({ offset: true });

/** The problem with the command line's values, or undefined when they are good. */
export function recoverUsageProblem(id: string, since: string): string | undefined {
  if (!/^[1-9]\d{0,15}$/.test(id))
    return `SUBSCRIPTION_ID: expected a subscription id (a positive whole number), not ${JSON.stringify(id.slice(0, 40))}`;
  if (!RFC3339.safeParse(since).success)
    return `--since: expected an RFC 3339 date-time, such as 2026-01-15T09:00:00Z, not ${JSON.stringify(since.slice(0, 40))}`;
  return undefined;
}

export async function recoverDeliveries(
  deliveries: Client<typeof DeliveryService>,
  args: { organisationId: string; clientId: string; subscriptionId: string; since: string },
): Promise<{ json: RecoveredJson; text: string }> {
  const since = new Date(args.since);
  const res = await deliveries.recoverDeliveries({
    owner: { organisationId: args.organisationId, clientId: args.clientId },
    subscriptionId: BigInt(args.subscriptionId),
    since: timestampFromDate(since),
  });
  const json: RecoveredJson = {
    subscription_id: Number(args.subscriptionId),
    since: since.toISOString(),
    queued: res.queuedCount,
  };
  const what = json.queued === 1 ? "1 delivery" : `${json.queued} deliveries`;
  return { json, text: `subscription ${json.subscription_id}: ${what} since ${json.since} queued, oldest first` };
}
