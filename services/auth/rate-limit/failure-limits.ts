// Brute-force limits on failures: logins (per email and address) and client
// authentications (per client and address), and every failure per address.
// They hold across replicas (the counters live in PostgreSQL). Implemented in
// postgres-failure-limits.ts.
//
// Every attempt is counted *before* its credential is looked at, and the
// point is given back when the credential was right. So attempts in flight
// together each take their own point first: of a burst of any size, at most
// the limit's number ever reach the credential in one window (checking
// first and counting after a failure would let the whole burst through).

export type FailureKind = "login" | "client";

export interface FailureLimits {
  /**
   * Before checking a credential: counts the attempt as a failure, atomically.
   * Throws ConnectError RESOURCE_EXHAUSTED with an OAuthError detail
   * { error: kind === "login" ? "invalid_credentials" : "invalid_client",
   * retry_after_seconds > 0 } when that takes the subject (an email or a
   * client_id) from this address, or the address itself, past its limit: then
   * the credential must not be checked at all.
   */
  consume(kind: FailureKind, subject: string, address: string): Promise<void>;
  /** After consume, when the credential was right (or was never judged): gives the point back. */
  refund(kind: FailureKind, subject: string, address: string): Promise<void>;
}
