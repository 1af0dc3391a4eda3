// Brute-force limits on failures: logins (per email and address), client
// authentications (per client and address), and every failure per address.
// The counters live in PostgreSQL, so they hold across replicas
// (postgres-failure-limits.ts). consume() counts and learns the new count in
// one atomic step, so a parallel burst cannot pass one read of the count.
// - Logins (a password is guessable): consume() before the password is
//   looked at, refund() when it was right: at most the limit's number of
//   attempts reach the password in a window.
// - Client authentication (a 256-bit secret is not guessable, and a write per
//   success would cap the token endpoint): a wrong secret is consume()d and
//   answered 429 instead of 401 once past the limit; a right one is refused
//   with 429 too while a counter read with it is over, so the limit never
//   tells a right secret from a wrong one.

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
   * The check is a read in the caller's own statement (client authentication
   * reads the counters with the client's row): counterKeys() are the keys to
   * bind, countersSql() reads their rows, overLimit() judges them.
   */
  counterKeys(kind: FailureKind, subject: string, address: string): string[];
  /**
   * A SQL scalar subquery: the stored counters whose keys are the rows of the
   * relation `keys` (one text column "key"), as a JSON array of StoredCounter.
   */
  countersSql(keys: string): string;
  /** The refusal (as consume() throws it) when a counter read with counterKeys() is past its limit; undefined when none is. */
  overLimit(kind: FailureKind, counters: readonly StoredCounter[]): Error | undefined;
}
