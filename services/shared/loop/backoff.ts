// The one way this codebase waits longer after each failure: exponential,
// capped, optionally jittered.

export interface Backoff {
  /** The wait after the first failure. */
  baseMs: number;
  /** The longest wait, however many failures. */
  maxMs: number;
  /** Spread each wait by up to ± this fraction, so that callers that failed together do not come back together. */
  jitter?: number;
}

/** `ms` stretched or shrunk by up to ± `fraction` of it. */
export function withJitter(ms: number, fraction: number, random: () => number = Math.random): number {
  return ms * (1 - fraction + random() * 2 * fraction);
}

/** The wait after failure `attempt` (1-based): baseMs × 2^(attempt − 1), at most maxMs, then jittered. */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  // 2 ** 1024 is Infinity, which the cap turns into maxMs; below 1 counts as the first failure.
  const ms = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, Math.floor(attempt) - 1));
  return backoff.jitter ? withJitter(ms, backoff.jitter, random) : ms;
}
