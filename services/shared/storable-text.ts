// Text every service stores as it was sent: no U+0000 (PostgreSQL's text
// cannot hold it: "invalid byte sequence for encoding UTF8: 0x00") and no
// unpaired UTF-16 surrogate (it has no UTF-8 form, and would be stored as
// U+FFFD, another value than the caller sent). The gateway refuses such a
// string in a request (gateway/string-params.ts), the RPC guard in a message
// (rpc/string-guard.ts).
//
// String.prototype.isWellFormed (ES2024, Node.js 20) answers the surrogate
// half natively, far cheaper than a regular expression (with a lookbehind for
// a lone low surrogate) or protobuf-es's own check (encodeURIComponent in a
// try, a copy of each string; rpc/string-guard.ts), on every string of every
// request.

/** Whether `s` holds neither U+0000 nor an unpaired surrogate. */
export const isStorableText = (s: string): boolean => s.isWellFormed() && !s.includes("\u0000");

/** Why `s` is not storable text, completing "… must not contain": the wording every refusal of it shares. */
export const unstorableReason = (s: string): string =>
  s.includes("\u0000") ? "control characters (U+0000)" : "an unpaired surrogate, which is not Unicode text";
