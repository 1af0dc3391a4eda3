// The browser flow's random values and their constant-time comparison.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** 256 random bits, base64url. */
export const randomToken = () => randomBytes(32).toString("base64url");
/** A session cookie's value: recognisable, 256 random bits; only tokenHash() of it is stored. */
export const newSessionSecret = () => `bcsess_${randomToken()}`;

/** Constant time whatever the lengths (both sides hashed first); an empty expected value never matches. */
export function tokensEqual(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b) && expected.length > 0;
}
