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
//   401 once past the limit; a right one is check()ed (a read) and refused
//   with 429 too while the window is over, so the limit never tells a right
//   secret from a wrong one. A burst of wrong secrets gets at most the limit's
//   number of 401s.

export type FailureKind = "login" | "client";

/** One counter check() reads: its key in the store and its limit. */
export interface CounterKey {
  key: string;
  limit: number;
}

/**
 * check() as a fragment of SQL, for a caller that folds the check into its
 * own statement (tokens/client-credentials-fast-path.ts). How the counters
 * are stored (the limiter's table, columns and key format) stays with the
 * FailureLimits that offers it: the caller binds what counters() returns as
 * rows of a relation, and puts overLimitSql() in its WHERE clause.
 */
export interface StoredFailureCheck {
  /** The counters check(kind, subject, address) reads. */
  counters(kind: FailureKind, subject: string, address: string): CounterKey[];
  /**
   * A SQL boolean, true when any of the counters is past its limit (when
   * check() would throw). `counters` is a relation (a table expression) with
   * columns "key" text and "limit" integer holding rows of counters();
   * `now` is where the statement binds now().
   */
  overLimitSql(counters: string, now: string): string;
  /** The value to bind for `now`, taken when the statement is sent. */
  now(): number;
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
  /** A read: throws as consume() does when the subject or the address is already past its limit. */
  check(kind: FailureKind, subject: string, address: string): Promise<void>;
  /**
   * check() in SQL, when the counters live in the service's PostgreSQL;
   * absent for limits kept elsewhere (then callers use check()).
   */
  stored?: StoredFailureCheck;
}

/**
 * The counters of a batch's calls as a statement binds them: three arrays of
 * one row a counter (the call's number from 1, its key, its limit), made in
 * one pass: the token endpoint's statement binds them on every batch.
 */
export function counterColumns(calls: readonly { counters: readonly CounterKey[] }[]): [number[], string[], number[]] {
  const n: number[] = [];
  const keys: string[] = [];
  const limits: number[] = [];
  calls.forEach((call, i) => {
    for (const c of call.counters) n.push(i + 1), keys.push(c.key), limits.push(c.limit);
  });
  return [n, keys, limits];
}
