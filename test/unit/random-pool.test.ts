// The pooled random values: the right length and alphabet, never the same
// bytes twice, across the pool's refills.
import { describe, expect, it } from "vitest";
import { newTokenValue } from "../../services/auth/grants/token-values.js";
import { pooledRandom } from "../../services/shared/random-pool.js";

describe("pooledRandom", () => {
  it("hands out fresh bytes each time, across many refills of the pool", () => {
    const seen = new Set<string>();
    // 32 bytes a value: 128 values a pool, so 10,000 values are 78 refills.
    for (let i = 0; i < 10_000; i++) {
      const value = pooledRandom(32, "base64url");
      expect(value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      seen.add(value);
    }
    expect(seen.size).toBe(10_000);
  });

  it("mixes sizes and encodings without overlap", () => {
    const hex = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const a = pooledRandom(16, "hex");
      const b = pooledRandom(8, "hex");
      expect(a).toMatch(/^[0-9a-f]{32}$/);
      expect(b).toMatch(/^[0-9a-f]{16}$/);
      hex.add(a).add(b);
    }
    expect(hex.size).toBe(4_000);
  });
});

describe("token values", () => {
  it("carry their prefix and 256 random bits, each one new", () => {
    const values = Array.from({ length: 1_000 }, () => newTokenValue("access"));
    for (const v of values) expect(v).toMatch(/^bca_[A-Za-z0-9_-]{43}$/);
    expect(new Set(values).size).toBe(1_000);
    expect(newTokenValue("refresh")).toMatch(/^bcr_/);
    expect(newTokenValue("code")).toMatch(/^bcc_/);
  });
});
