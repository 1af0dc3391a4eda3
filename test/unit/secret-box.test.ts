// The box the webhook signing secrets are sealed in at rest
// (services/webhook/subscriptions/secret-box.ts): what it seals opens again,
// under any listed key; an altered value, a key not listed, or anything else
// is a SecretBoxError, never a value handed back. No database.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SecretBoxError, keyId, secretBox } from "../../services/webhook/subscriptions/secret-box.js";
import { newSigningSecret } from "../../services/webhook/webhook-service.js";

const A = randomBytes(32);
const B = randomBytes(32);
const SEALED = /^v1\.([A-Za-z0-9_-]{8})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{22})$/;

/** The SecretBoxError `fn` throws. */
function refusal(fn: () => unknown): SecretBoxError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(SecretBoxError);
  return caught as SecretBoxError;
}

/** `stored` with one of its five dot-separated parts changed by `change`. */
function altered(stored: string, part: number, change: (bytes: Buffer) => Buffer): string {
  const parts = stored.split(".");
  parts[part] = change(Buffer.from(parts[part]!, "base64url")).toString("base64url");
  return parts.join(".");
}

const flipFirstBit = (bytes: Buffer) => {
  const copy = Buffer.from(bytes);
  copy[0]! ^= 1;
  return copy;
};

describe("secretBox", () => {
  it("seals a secret into v1.<key id>.<iv>.<ciphertext>.<tag> that holds none of it, and opens it again", () => {
    const box = secretBox([A]);
    const secret = newSigningSecret();
    const stored = box.seal(secret);
    const [, id, iv, ciphertext, tag] = SEALED.exec(stored)!;
    expect(id).toBe(keyId(A));
    expect(box.currentKeyId).toBe(keyId(A));
    expect(box.currentPrefix).toBe(`v1.${keyId(A)}.`);
    expect(Buffer.from(iv!, "base64url")).toHaveLength(12);
    expect(Buffer.from(tag!, "base64url")).toHaveLength(16);
    expect(Buffer.from(ciphertext!, "base64url")).toHaveLength(secret.length);
    const bytes = Buffer.from(secret.slice("whsec_".length), "base64");
    for (const form of [secret, bytes.toString("base64"), bytes.toString("base64url"), bytes.toString("hex"), "whsec_"])
      expect(stored).not.toContain(form);
    expect(box.open(stored)).toBe(secret);
    expect(box.isCurrent(stored)).toBe(true);
    expect(box.reseal(stored)).toBe(stored);
  });

  it("uses a fresh IV each time: the same secret sealed twice differs, and both open", () => {
    const box = secretBox([A]);
    const secret = newSigningSecret();
    const [one, two] = [box.seal(secret), box.seal(secret)];
    expect(one).not.toBe(two);
    expect(one.split(".")[2]).not.toBe(two.split(".")[2]);
    expect([box.open(one), box.open(two)]).toEqual([secret, secret]);
  });

  it("names a key by 8 characters of a hash, the same for the same key and never the key", () => {
    expect(keyId(A)).toMatch(/^[A-Za-z0-9_-]{8}$/);
    expect(keyId(Buffer.from(A))).toBe(keyId(A));
    expect(keyId(B)).not.toBe(keyId(A));
    for (const form of [A.toString("base64"), A.toString("base64url"), A.toString("hex")])
      expect(form).not.toContain(keyId(A));
  });

  it("detects any alteration: of the ciphertext, the tag, the IV or the key id named in the header", () => {
    const box = secretBox([A, B]);
    const stored = box.seal(newSigningSecret());
    for (const part of [2, 3, 4]) {
      const err = refusal(() => box.open(altered(stored, part, flipFirstBit)));
      expect(err.message).toMatch(new RegExp(`sealed with key ${keyId(A)} but it does not open under that key`));
    }
    // A shortened tag is refused, not checked against its first bytes only.
    refusal(() => box.open(altered(stored, 4, (tag) => tag.subarray(0, 12))));
    // The header is authenticated too: naming the other listed key does not open it.
    const renamed = stored.replace(`v1.${keyId(A)}.`, `v1.${keyId(B)}.`);
    expect(refusal(() => box.open(renamed)).message).toContain(`sealed with key ${keyId(B)} but it does not open`);
  });

  it("opens under any listed key and seals under the first: a rotation's [B, A] re-seals A's values under B", () => {
    const secret = newSigningSecret();
    const underA = secretBox([A]).seal(secret);
    const rotating = secretBox([B, A]);
    expect(rotating.open(underA)).toBe(secret);
    expect(rotating.isCurrent(underA)).toBe(false);
    const underB = rotating.reseal(underA);
    expect(underB.startsWith(`v1.${keyId(B)}.`)).toBe(true);
    expect(secretBox([B]).open(underB)).toBe(secret);
  });

  it("refuses a value sealed with a key it does not list, naming that key's id and the listed ones, never a key", () => {
    const underA = secretBox([A]).seal(newSigningSecret());
    const err = refusal(() => secretBox([B]).open(underA));
    expect(err.message).toContain(
      `sealed with key ${keyId(A)}, which WEBHOOK_SECRET_ENCRYPTION_KEY does not list (it lists ${keyId(B)})`,
    );
    for (const key of [A, B])
      for (const form of [key.toString("base64"), key.toString("base64url"), key.toString("hex")])
        expect(err.message).not.toContain(form);
    refusal(() => secretBox([B]).reseal(underA));
  });

  it("opens a clear whsec_ secret (stored before sealing) as itself, counted as not sealed; reseal seals it", () => {
    const box = secretBox([A]);
    const clear = newSigningSecret();
    expect(box.open(clear)).toBe(clear);
    expect(box.isCurrent(clear)).toBe(false);
    const sealed = box.reseal(clear);
    expect(sealed).toMatch(SEALED);
    expect(box.open(sealed)).toBe(clear);
  });

  it("refuses anything else: another version, too few parts, an empty value", () => {
    const box = secretBox([A]);
    const stored = box.seal(newSigningSecret());
    for (const bad of [
      stored.replace(/^v1\./, "v2."),
      stored.split(".").slice(0, 4).join("."),
      "",
      "plain-text-secret",
    ]) {
      expect(refusal(() => box.open(bad)).message).toMatch(/neither sealed \(v1\.\) nor a clear whsec_ secret/);
    }
  });

  it("needs at least one key, each of 32 bytes", () => {
    expect(refusal(() => secretBox([])).message).toMatch(/no key/);
    expect(refusal(() => secretBox([A, randomBytes(16)])).message).toMatch(/32 bytes, not 16/);
  });
});
