// Brute-force limits on failures: logins (per email and address) and client
// authentications (per client and address), and every failure per address.
// They hold across replicas (the counters live in PostgreSQL). Implemented in
// postgres-failure-limits.ts.
//
// Counting is atomic: consume() adds the point and learns the new count in
// one step, so attempts in flight together cannot all pass one read of the
// count (checking first and counting after a failure would let a whole
// parallel burst through). Two ways to use it:
// - logins (a password is guessable): consume() before the password is
//   looked at, refund() when it was right. Of a burst of any size at most the
//   limit's number ever reach the password in one window.
// - client authentication (a 256-bit secret is not guessable; the token
//   endpoint is hot, and a write per success on one shared row would cap it):
//   the secret first; a wrong one is consume()d, and answered 429 instead of
//   401 once past the limit; for a right one the counters are read and it is
//   refused with 429 too while the window is over, so the limit never tells a right
//   secret from a wrong one. A burst of wrong secrets gets at most the limit's
//   number of 401s.

export type FailureKind = "login" | "client";

/** A stored counter as countersSql() reads it: the library's row. */
export interface StoredCounter {
  key: string;
  points: number;
  /** Epoch milliseconds; null: no expiry. */
  expire: number | null;
}

export interface FailureLimits {
  /**
   * Counts one failed (or, before the credential is looked at, one pending)
   * attempt, atomically. Throws ConnectError RESOURCE_EXHAUSTED with an
   * OAuthError detail { error: kind === "login" ? "invalid_credentials" :
   * "invalid_client", retry_after_seconds > 0 } when this attempt takes the
   * subject (an email or a client_id) from this address, or the address
   * itself, past its limit.
   */
  consume(kind: FailureKind, subject: string, address: string): Promise<void>;
  /** Gives back a point consume() took before a credential that was right (or never judged). */
  refund(kind: FailureKind, subject: string, address: string): Promise<void>;
  /**
   * The check is a read a caller makes in its own statement (client
   * authentication reads the counters with the client's row: one round trip):
   * counterKeys() are the keys to bind, countersSql() reads their rows, and
   * overLimit() judges them.
   */
  counterKeys(kind: FailureKind, subject: string, address: string): string[];
  /**
   * A SQL scalar subquery: the stored counters whose keys are the rows of the
   * relation `keys` (one text column "key"), as a JSON array of StoredCounter.
   */
  countersSql(keys: string): string;
  /** The refusal (as consume() throws it) when a counter read is past its limit; undefined when none is. */
  overLimit(kind: FailureKind, subject: string, address: string, counters: readonly StoredCounter[]): Error | undefined;
}
