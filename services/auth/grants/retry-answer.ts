// The answer of a refresh, kept for the contract's retry window: encrypted
// with AES-256-GCM under a key derived (HKDF-SHA256) from the refresh token
// presented, so only its holder can read it back (the database has its hash).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { IssuedTokens } from "./issue-tokens.js";

const INFO = "bizcard refresh-token retry answer v1";

const keyOf = (refreshToken: string) => Buffer.from(hkdfSync("sha256", refreshToken, "", INFO, 32));

/** iv (12) | tag (16) | ciphertext of the JSON answer. */
export function sealAnswer(refreshToken: string, issued: IssuedTokens): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyOf(refreshToken), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(issued), "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** Undefined when it does not open (another token, or tampered). */
export function openAnswer(refreshToken: string, sealed: Buffer): IssuedTokens | undefined {
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(refreshToken), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    const body = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]);
    return JSON.parse(body.toString("utf8")) as IssuedTokens;
  } catch {
    return undefined;
  }
}
