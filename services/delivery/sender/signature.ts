// The Standard Webhooks signature of one message: "The content to sign is
// composed by concatenating the id, timestamp and payload, separated by the
// full-stop character (.)" … "HMAC with SHA-256", "Base64 encoded, prefixed
// with a version identifier (v1,)"; the secret is the base64 after `whsec_`.
// node:crypto's HMAC rather than the `standardwebhooks` package's sign(), which
// hashes in JavaScript; test/webhooks/webhook-signature.test.ts holds the two
// to the same output.
import { createHmac } from "node:crypto";

const SECRET_PREFIX = "whsec_";

/** The key a `whsec_…` secret stands for (its base64, decoded). */
export function signingKey(secret: string): Buffer {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
  if (key.length === 0) throw new Error("a webhook secret cannot be empty");
  return key;
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>">`. */
export function sign(secret: string, messageId: string, timestamp: Date, body: string): string {
  const hmac = createHmac("sha256", signingKey(secret));
  hmac.update(`${messageId}.${Math.floor(timestamp.getTime() / 1000)}.${body}`);
  return `v1,${hmac.digest("base64")}`;
}
