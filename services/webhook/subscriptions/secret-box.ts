// Webhook signing secrets sealed at rest: AES-256-GCM under the first key of
// WEBHOOK_SECRET_ENCRYPTION_KEY, opened by any listed key (rotation: a new key
// first, then `bizcard secrets reencrypt`). Stored as
// `v1.<key id>.<iv>.<ciphertext>.<tag>` (base64url), the key id a hash of the
// key and "v1.<key id>" the additional authenticated data. A clear "whsec_…"
// value opens as itself. NIST SP 800-38D, 8.3: "The total number of
// invocations … shall not exceed 2^32": far beyond one key's subscriptions.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** A clear secret, one never sealed (Standard Webhooks' prefix). */
const CLEAR_PREFIX = "whsec_";

/** A stored secret that cannot be opened: its key is not listed, it was altered, or it is neither sealed nor clear. */
export class SecretBoxError extends Error {
  override readonly name = "SecretBoxError";
}

export type SecretBox = ReturnType<typeof secretBox>;

/**
 * What `read` makes of subscription `id`'s stored secret, or FAILED_PRECONDITION naming it: never handed out unopened.
 */
export function readingSecret<T>(id: bigint | string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof SecretBoxError)) throw err;
    const message = `the signing secret of subscription ${id} cannot be read: ${err.message}`;
    throw new ConnectError(message, Code.FailedPrecondition);
  }
}

/** A key's id: 8 base64url characters of a SHA-256 of the key (with a label of its own), never the key. */
export function keyId(key: Buffer): string {
  const digest = createHash("sha256").update("bizcard webhook secret key id\0").update(key).digest();
  return digest.subarray(0, 6).toString("base64url");
}

/** A box over `keys` (each 32 bytes): the first seals, any opens. */
export function secretBox(keys: readonly Buffer[]) {
  if (keys.length === 0) throw new SecretBoxError("no key: WEBHOOK_SECRET_ENCRYPTION_KEY lists none");
  for (const key of keys)
    if (key.length !== KEY_BYTES) throw new SecretBoxError(`a key must be ${KEY_BYTES} bytes, not ${key.length}`);
  const listed = keys.map((key) => ({ id: keyId(key), key }));
  const current = listed[0]!;
  const ids = listed.map((k) => k.id).join(", ");

  /** The secret in `stored` (sealed under any listed key, or clear); a SecretBoxError otherwise. */
  function open(stored: string): string {
    if (stored.startsWith(CLEAR_PREFIX)) return stored;
    const parts = stored.split(".");
    if (parts.length !== 5 || parts[0] !== VERSION)
      throw new SecretBoxError(`a stored secret is neither sealed (${VERSION}.) nor a clear ${CLEAR_PREFIX} secret`);
    const [, id, iv, ciphertext, tag] = parts as [string, string, string, string, string];
    const candidates = listed.filter((k) => k.id === id);
    if (candidates.length === 0) {
      throw new SecretBoxError(
        `sealed with key ${id}, which WEBHOOK_SECRET_ENCRYPTION_KEY does not list (it lists ${ids}): add that key back after the current one`,
      );
    }
    for (const { key } of candidates) {
      // Node: "If no tag is provided, or if the cipher text has been tampered with, decipher.final() will throw".
      // authTagLength refuses a shortened tag.
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(`${VERSION}.${id}`));
      try {
        decipher.setAuthTag(Buffer.from(tag, "base64url"));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString();
      } catch {
        // Another listed key with the same id (astronomically unlikely) may still open it.
      }
    }
    throw new SecretBoxError(
      `sealed with key ${id} but it does not open under that key: the stored value was altered, or the key is not the one it was sealed with`,
    );
  }

  function seal(secret: string): string {
    const iv = randomBytes(IV_BYTES);
    const header = `${VERSION}.${current.id}`;
    const cipher = createCipheriv("aes-256-gcm", current.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(header));
    const ciphertext = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
    return `${header}.${iv.toString("base64url")}.${ciphertext.toString("base64url")}.${cipher.getAuthTag().toString("base64url")}`;
  }

  // How every value sealed under the current key begins.
  const currentPrefix = `${VERSION}.${current.id}.`;
  const isCurrent = (stored: string) => stored.startsWith(currentPrefix);
  return {
    currentKeyId: current.id,
    currentPrefix,
    seal,
    open,
    isCurrent,
    /** `stored` sealed under the current key: itself when it already is. */
    reseal: (stored: string) => (isCurrent(stored) ? stored : seal(open(stored))),
  };
}
