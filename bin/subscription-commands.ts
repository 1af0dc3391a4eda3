// `bizcard subscriptions …`: a pair's webhook subscriptions, over the webhook
// service. rotate-secret gives one a new signing secret; the old one keeps
// signing for WEBHOOK_SECRET_OVERLAP_SECONDS. Its JSON is what
// POST /oauth/webhooks/subscriptions/{id}/rotate-secret answers, same names and types.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import type { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import type { RotatedSecretJson } from "../gateway/routes/subscription-secret.js";

export async function rotateSecret(
  webhook: Client<typeof WebhookService>,
  args: { organisationId: string; clientId: string; id: bigint },
) {
  const res = await webhook.rotateSubscriptionSecret({
    owner: { organisationId: args.organisationId, clientId: args.clientId },
    id: args.id,
  });
  const json: RotatedSecretJson = {
    id: Number(res.subscription!.id),
    secret: res.secret,
    previous_secret_expires_at: res.oldSecretExpireTime ? timestampDate(res.oldSecretExpireTime).toISOString() : null,
  };
  const until = json.previous_secret_expires_at
    ? `the old secret signs too until ${json.previous_secret_expires_at}`
    : "the old secret stopped signing";
  return { json, text: `subscription ${json.id}\nsecret ${json.secret}   (shown once)\n${until}` };
}
