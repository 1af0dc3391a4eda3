// Text every service stores as it was sent: no U+0000 (PostgreSQL's text
// cannot hold it) and no unpaired UTF-16 surrogate (no UTF-8 form: it would
// be stored as U+FFFD). The gateway refuses such a string in a request
// (gateway/string-params.ts), the RPC guard in a message (rpc/string-guard.ts).
// isWellFormed answers the surrogate half natively, far cheaper than a regular expression.

/** Whether `s` holds neither U+0000 nor an unpaired surrogate. */
export const isStorableText = (s: string): boolean => s.isWellFormed() && !s.includes("\u0000");

/** Why `s` is not storable text, completing "… must not contain": the wording every refusal of it shares. */
export const unstorableReason = (s: string): string =>
  s.includes("\u0000") ? "control characters (U+0000)" : "an unpaired surrogate, which is not Unicode text";
