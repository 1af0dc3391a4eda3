// Client identifiers and secrets. A secret is 256 random bits, so a plain
// SHA-256 of it is safe to store (no dictionary to attack) and cheap to check
// on every token request; the comparison is constant time.
import { hash, randomBytes, timingSafeEqual } from "node:crypto";

export const newClientId = () => `bc_${randomBytes(12).toString("base64url")}`;
export const newClientSecret = () => `bcs_${randomBytes(32).toString("base64url")}`;

/** One-shot crypto.hash (Node 20.12+): no Hash object per call, on every token request. */
export function hashSecret(secret: string): string {
  return hash("sha256", secret, "base64url");
}

export function secretMatches(secret: string, storedHash: string | null | undefined): boolean {
  const expected = Buffer.from(storedHash ?? hashSecret(randomBytes(32).toString("hex")), "base64url");
  const actual = Buffer.from(hashSecret(secret), "base64url");
  return Boolean(storedHash) && actual.length === expected.length && timingSafeEqual(actual, expected);
}
