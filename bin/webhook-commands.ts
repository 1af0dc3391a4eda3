// `bizcard subscriptions rotate-secret` and `bizcard secrets reencrypt`: the
// webhook service. rotate-secret gives a subscription a new signing secret (the
// old one signs too for WEBHOOK_SECRET_OVERLAP_SECONDS), answering what POST
// /oauth/webhooks/subscriptions/{id}/rotate-secret does. reencrypt seals every
// stored secret under the first WEBHOOK_SECRET_ENCRYPTION_KEY, after a new key
// or an upgrade from clear secrets; a second run seals none.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { RotatedSecretJson } from "../gateway/routes/subscription-secret.js";
import { subscriptionId, type CommandRun } from "./cli-commands.js";

export const WEBHOOK_COMMANDS: Record<string, CommandRun> = {
  async "subscriptions rotate-secret"({ webhook }, values, [id]) {
    const res = await webhook.rotateSubscriptionSecret({
      owner: { organisationId: values.org as string, clientId: values.client as string },
      id: subscriptionId("ID", id!),
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
  },

  async "secrets reencrypt"({ webhook }) {
    const res = await webhook.reencryptSecrets({});
    const json = { reencrypted: res.reencryptedCount, key_id: res.keyId };
    const what =
      json.reencrypted === 1
        ? "1 subscription's signing secrets"
        : `${json.reencrypted} subscriptions' signing secrets`;
    return { json, text: `re-sealed ${what} under key ${json.key_id}; every secret is sealed under it now` };
  },
};
