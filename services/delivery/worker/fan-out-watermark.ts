// The fan-out's watermark (the fan-out consumer's ack floor), read before a
// claim and kept briefly: an ordered delivery above it is not claimed yet. A
// stale one is lower, so it only holds back more: never unsafe.
import type { Logger } from "../../shared/logger.js";

/** How long a read watermark is used. */
const CACHE_MS = 200;
/**
 * After the fan-out here recorded ordered deliveries, read again this
 * long after (the broker counts an ack a little later).
 */
const RELOOK_MS = [20, 100, 400];
/** A read that takes longer counts as failed: the claim (unordered deliveries too) does not wait for the broker. */
const READ_TIMEOUT_MS = 1000;

export class FanOutWatermark {
  private last: { value: number; at: number } | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private failing = false;

  /** `read`: the ack floor; undefined when the consumer does not exist (yet): nothing counts as recorded. */
  constructor(
    private readonly read: () => Promise<number | undefined>,
    private readonly logger: Logger,
  ) {}

  /**
   * The watermark, read at most every CACHE_MS; unreadable: the last
   * one read, or 0 (no sequenced ordered delivery goes).
   */
  async current(): Promise<number> {
    if (this.last && Date.now() - this.last.at < CACHE_MS) return this.last.value;
    try {
      this.last = { value: (await withTimeout(this.read(), READ_TIMEOUT_MS)) ?? 0, at: Date.now() };
      if (this.failing) this.logger.info({ watermark: this.last.value }, "fan-out watermark readable again");
      this.failing = false;
      return this.last.value;
    } catch (err) {
      if (!this.failing) this.logger.warn({ err }, "fan-out watermark unreadable; ordered deliveries wait for it");
      this.failing = true;
      // The last value, stamped now: not asked again on every claim for CACHE_MS.
      this.last = { value: this.last?.value ?? 0, at: Date.now() };
      return this.last.value;
    }
  }

  /**
   * Ordered deliveries were recorded here, not yet acknowledged: forget
   * the watermark and call `look` a few times shortly after.
   */
  relookSoon(look: () => void): void {
    for (const ms of RELOOK_MS) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.last = undefined;
        look();
      }, ms);
      timer.unref();
      this.timers.add(timer);
    }
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
