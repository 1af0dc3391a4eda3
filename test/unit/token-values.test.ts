// Token values and the secrets of clients and sessions, without a database:
// their shape (a recognisable prefix and 256 random bits), the one hash that
// is stored of them, the constant-time comparisons, and the refresh answer
// kept for the retry window, which opens only with its refresh token.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { hashSecret, newClientId, newClientSecret, secretMatches } from "../../services/auth/clients/client-secret.js";
import { newSessionSecret, randomToken, tokensEqual } from "../../services/auth/interactions/secrets.js";
import { openAnswer, sealAnswer } from "../../services/auth/grants/retry-answer.js";
import { newTokenValue, TOKEN_PREFIX } from "../../services/auth/grants/token-values.js";
import { tokenHash } from "../../services/shared/token-hash.js";

const B64URL_256 = "[A-Za-z0-9_-]{43}";

describe("token values", () => {
  it("are a kind's prefix and 256 random bits, base64url, never twice the same", () => {
    for (const kind of ["access", "refresh", "code"] as const) {
      const a = newTokenValue(kind);
      expect(a).toMatch(new RegExp(`^${TOKEN_PREFIX[kind]}${B64URL_256}$`));
      expect(newTokenValue(kind)).not.toBe(a);
    }
    expect(TOKEN_PREFIX).toEqual({ access: "bca_", refresh: "bcr_", code: "bcc_" });
    expect(newSessionSecret()).toMatch(new RegExp(`^bcsess_${B64URL_256}$`));
    expect(randomToken()).toMatch(new RegExp(`^${B64URL_256}$`));
  });

  it("are stored as SHA-256, base64url without padding", () => {
    expect(tokenHash("abc")).toBe("ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
    expect(tokenHash("bca_x")).toBe(createHash("sha256").update("bca_x").digest("base64url"));
    expect(tokenHash("bca_x")).not.toBe(tokenHash("bca_y"));
  });
});

describe("client identifiers and secrets", () => {
  it("a client id is bc_ and 96 random bits; a secret bcs_ and 256", () => {
    expect(newClientId()).toMatch(/^bc_[A-Za-z0-9_-]{16}$/);
    expect(newClientSecret()).toMatch(new RegExp(`^bcs_${B64URL_256}$`));
  });

  it("a secret matches only its own stored hash, and never a missing one", () => {
    const secret = newClientSecret();
    const stored = hashSecret(secret);
    expect(stored).toBe(tokenHash(secret));
    expect(secretMatches(secret, stored)).toBe(true);
    expect(secretMatches(`${secret}x`, stored)).toBe(false);
    expect(secretMatches(newClientSecret(), stored)).toBe(false);
    expect(secretMatches(secret, null)).toBe(false);
    expect(secretMatches(secret, undefined)).toBe(false);
    expect(secretMatches(secret, "")).toBe(false);
  });
});

describe("session and CSRF values", () => {
  it("compare equal only when equal, whatever the lengths; an empty expected value never matches", () => {
    const t = randomToken();
    expect(tokensEqual(t, t)).toBe(true);
    expect(tokensEqual(t, `${t}x`)).toBe(false);
    expect(tokensEqual("", t)).toBe(false);
    expect(tokensEqual("", "")).toBe(false);
  });
});

describe("the refresh answer kept for the retry window", () => {
  const issued: Parameters<typeof sealAnswer>[1] = {
    accessToken: newTokenValue("access"),
    refreshToken: newTokenValue("refresh"),
    expiresAt: 1_800_000_000_000,
    scopes: ["organisation:read"],
  };

  it("opens with the refresh token it was sealed under, and with nothing else", () => {
    const presented = newTokenValue("refresh");
    const sealed = sealAnswer(presented, issued);
    expect(openAnswer(presented, sealed)).toEqual(issued);
    expect(openAnswer(newTokenValue("refresh"), sealed)).toBeUndefined();
    // Tampered: undefined, never a throw.
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1]! ^= 1;
    expect(openAnswer(presented, tampered)).toBeUndefined();
    expect(openAnswer(presented, Buffer.alloc(10))).toBeUndefined();
    // The stored form holds neither token in the clear.
    expect(sealed.toString("latin1")).not.toContain(issued.accessToken);
  });
});
