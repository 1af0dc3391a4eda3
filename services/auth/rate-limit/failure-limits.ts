// Brute-force limits on failures: logins (per email and address), client
// authentications (per client and address), and every failure per address.
// consume() counts and learns the count in one atomic step: a parallel burst
// cannot pass one read of it. A login consume()s before the password is
// looked at and refund()s when it was right. A client authentication
// consume()s only a wrong secret (a write per success would cap the token
// endpoint); a right one is refused while over, so a 429 tells neither apart.

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
   * Counts one failed (or pending) attempt, atomically. Throws
   * RESOURCE_EXHAUSTED (error invalid_credentials for a login, else
   * invalid_client; retry_after_seconds) when this takes the subject from
   * this address, or the address itself, past its limit.
   */
  consume(kind: FailureKind, subject: string, address: string): Promise<void>;
  /** Gives back a point consume() took before a credential that was right (or never judged). */
  refund(kind: FailureKind, subject: string, address: string): Promise<void>;
  /** The keys of the counters to read in the caller's own statement (client authentication reads them with its row). */
  counterKeys(kind: FailureKind, subject: string, address: string): string[];
  /**
   * A SQL scalar subquery: the counters keyed by the rows of relation `keys` ("key"), a JSON array of StoredCounter.
   */
  countersSql(keys: string): string;
  /** The refusal consume() would throw when a counter is past its limit; undefined when none is. */
  overLimit(kind: FailureKind, counters: readonly StoredCounter[]): Error | undefined;
}
