// `bizcard secrets reencrypt`: after a new key is put first in
// WEBHOOK_SECRET_ENCRYPTION_KEY (and every webhook process restarted with the
// list), or after an upgrade from a version that stored the signing secrets
// in clear, seals every stored secret under the current key, over the webhook
// service's ReencryptSecrets. Safe to run again: a second run seals none.
// Then the older keys can leave the list.
import type { Client } from "@connectrpc/connect";
import type { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";

export async function reencryptSecrets(webhook: Client<typeof WebhookService>) {
  const res = await webhook.reencryptSecrets({});
  const json = { reencrypted: res.reencryptedCount, key_id: res.keyId };
  const what =
    json.reencrypted === 1 ? "1 subscription's signing secrets" : `${json.reencrypted} subscriptions' signing secrets`;
  return { json, text: `re-sealed ${what} under key ${json.key_id}; every secret is sealed under it now` };
}
