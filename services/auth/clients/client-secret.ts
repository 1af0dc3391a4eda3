// Client identifiers and secrets. A secret is 256 random bits, so a plain
// SHA-256 of it is safe to store (no dictionary to attack) and cheap to check
// on every token request; the comparison is constant time.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { sha256Base64url } from "../../shared/token-hash.js";

export const newClientId = () => `bc_${randomBytes(12).toString("base64url")}`;
export const newClientSecret = () => `bcs_${randomBytes(32).toString("base64url")}`;

export function hashSecret(secret: string): string {
  return sha256Base64url(secret);
}

export function secretMatches(secret: string, storedHash: string | null | undefined): boolean {
  const expected = Buffer.from(storedHash ?? hashSecret(randomBytes(32).toString("hex")), "base64url");
  const actual = Buffer.from(hashSecret(secret), "base64url");
  return Boolean(storedHash) && actual.length === expected.length && timingSafeEqual(actual, expected);
}
