import { describe, expect, it } from "vitest";
import { create, clone } from "@bufbuild/protobuf";
import { isStorableText } from "../../services/shared/storable-text.js";
import { findUnsafeString } from "../../services/shared/rpc/string-guard.js";
import { ExchangeTokenRequestSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";

// The rule as a regular expression (what gateway/string-params.ts and
// rpc/string-guard.ts held until 2026-11-29): U+0000, a high surrogate not
// followed by a low one, or a low one not preceded by a high one.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const cases: [string, string][] = [
  ["plain ASCII", "organisation:read"],
  ["empty", ""],
  ["non-ASCII text", "Zoë Müller, 東京"],
  ["a surrogate pair (an emoji)", "card \ud83d\udcc7"],
  ["U+0000", "a\u0000b"],
  ["U+0000 alone", "\u0000"],
  ["a lone high surrogate at the end", "abc\ud83d"],
  ["a lone high surrogate before ASCII", "\ud83dabc"],
  ["a lone low surrogate at the start", "\udcc7abc"],
  ["a pair reversed (low, then high)", "\udcc7\ud83d"],
  ["two high surrogates, then a low one", "\ud83d\ud83d\udcc7"],
  ["a pair, then a lone low surrogate", "\ud83d\udcc7\udcc7"],
  ["U+FFFD and U+FFFF (not surrogates)", "\ufffd\uffff"],
];

describe("isStorableText", () => {
  it.each(cases)("agrees with the rule's regular expression: %s", (_, s) => {
    expect(isStorableText(s)).toBe(!UNSTORABLE.test(s));
  });

  it("refuses exactly U+0000 and unpaired surrogates", () => {
    expect(cases.filter(([, s]) => !isStorableText(s)).map(([name]) => name)).toEqual([
      "U+0000",
      "U+0000 alone",
      "a lone high surrogate at the end",
      "a lone high surrogate before ASCII",
      "a lone low surrogate at the start",
      "a pair reversed (low, then high)",
      "two high surrogates, then a low one",
      "a pair, then a lone low surrogate",
    ]);
  });
});

describe("protobuf-es's string check (configured by rpc/string-guard.ts)", () => {
  it("copies a message whose strings are well formed, a surrogate pair included", () => {
    const message = create(ExchangeTokenRequestSchema, { scope: "card \ud83d\udcc7", grantType: "client_credentials" });
    expect(clone(ExchangeTokenRequestSchema, message).scope).toBe("card \ud83d\udcc7");
  });

  it("refuses to copy a lone surrogate, as its own check did", () => {
    const message = create(ExchangeTokenRequestSchema, { grantType: "client_credentials" });
    message.scope = "abc\ud83d";
    expect(() => clone(ExchangeTokenRequestSchema, message)).toThrow(/invalid UTF8/);
    expect(findUnsafeString(ExchangeTokenRequestSchema, message)).toBe("scope");
  });
});
