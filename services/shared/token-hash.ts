// The one hash of bearer values (tokens, codes, session ids): the values are
// 256-bit random, so a fast hash is safe to store and cheap to check. The auth
// service stores these, the gateway keys its bearer cache by them, and
// bizcard.token.revoked names revoked tokens by them.
import { hash } from "node:crypto";

/** SHA-256 of a string's UTF-8, base64url without padding (one-shot crypto.hash: no Hash object per call). */
export function sha256Base64url(value: string): string {
  return hash("sha256", value, "base64url");
}

/** The hash of a bearer value, on every bearer check. */
export const tokenHash = sha256Base64url;
