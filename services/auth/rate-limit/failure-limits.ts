// Brute-force limits on failures: logins (per email and address) and client
// authentications (per client and address), and every failure per address.
// They hold across replicas (the counters live in PostgreSQL). Implemented in
// postgres-failure-limits.ts.

export type FailureKind = "login" | "client";

export interface FailureLimits {
  /**
   * Before checking a credential: throws ConnectError RESOURCE_EXHAUSTED with
   * an OAuthError detail { error: kind === "login" ? "invalid_credentials" :
   * "invalid_client", retry_after_seconds > 0 } when the subject (an email or
   * a client_id) from this address, or the address itself, is over its limit.
   */
  check(kind: FailureKind, subject: string, address: string): Promise<void>;
  /** Counts one failed attempt (after the credential was refused). */
  fail(kind: FailureKind, subject: string, address: string): Promise<void>;
}
