// A subscriber as the delivery service reads it: one row of the webhook
// service's statements, its signing secrets opened.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { SubscriberSchema, type Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { SecretBoxError, type SecretBox } from "./secret-box.js";
import { signingPreviousSecret } from "./secret-rotation.js";

/** What `read` makes of subscription `id`'s stored secret, or FAILED_PRECONDITION naming it: never handed out unopened. */
export function readingSecret<T>(id: bigint | string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof SecretBoxError)) throw err;
    throw new ConnectError(
      `the signing secret of subscription ${id} cannot be read: ${err.message}`,
      Code.FailedPrecondition,
    );
  }
}

/** One row of the service's subscriber statements as a Subscriber, its secrets opened. */
export function subscriberOfRow(r: Record<string, unknown>, secrets: SecretBox): Subscriber {
  const previous = signingPreviousSecret({
    previousSecret: r.previous_secret as string | null,
    previousSecretExpiresAt: r.previous_secret_expires_at
      ? new Date(r.previous_secret_expires_at as string | Date)
      : null,
  });
  const open = (stored: string) => readingSecret(r.id as string, () => secrets.open(stored));
  return create(SubscriberSchema, {
    subscriptionId: BigInt(r.id as string),
    clientId: r.client_id as string,
    targetUrl: r.target_url as string,
    secret: open(r.secret as string),
    disabled: r.disabled_at !== null,
    ordered: r.ordered as boolean,
    ...(previous
      ? { previousSecret: open(previous.secret), previousSecretExpireTime: timestampFromDate(previous.expiresAt) }
      : {}),
  });
}
