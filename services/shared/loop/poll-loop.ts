// The one loop shape of the background workers (the outbox relay, the
// delivery worker, a NATS consumer reopening its pull): run a round, wait
// what it asked for, back off after failures, wake early when told there is
// work, and stop after the round in hand.
import { backoffDelay, type Backoff } from "./backoff.js";

export interface PollLoopOptions {
  /** One round: resolves to the wait before the next (0: the next at once); throws to back off. */
  round(): Promise<number>;
  /** The waits after consecutive failed rounds. */
  backoff: Backoff;
  /** A round failed; the next starts after `retryInMs` (not called for a round that failed because of stop()). */
  onError(err: unknown, retryInMs: number): void;
  /**
   * Whether wake() also ends a failure back-off; false keeps a loop whose backend is down from retrying on every wake.
   */
  wakeEndsBackoff?: boolean;
}

export class PollLoop {
  private stopped = true;
  private running: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** wake() was called since the current round started: the next starts at once. */
  private pendingWake = false;
  private backingOff = false;

  constructor(private readonly options: PollLoopOptions) {}

  /** False once stop() was called (or before start()). */
  get active(): boolean {
    return !this.stopped;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.running = this.run();
  }

  /** There is work: the next round starts now, or as soon as the one in hand ends. */
  wake(): void {
    this.pendingWake = true;
    if (!this.backingOff || this.options.wakeEndsBackoff) this.wakeUp?.();
  }

  /** Lets the round in hand finish; no new round starts. */
  stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    return this.running ?? Promise.resolve();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      this.pendingWake = false;
      let delay: number;
      try {
        delay = await this.options.round();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        failures++;
        delay = backoffDelay(failures, this.options.backoff);
        this.options.onError(err, delay);
      }
      if (this.stopped) break;
      if (delay > 0) await this.sleep(delay, failures > 0);
      // A round that needed no I/O must not starve the timers and sockets of the process.
      else await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private sleep(ms: number, backingOff: boolean): Promise<void> {
    const interruptible = !backingOff || this.options.wakeEndsBackoff === true;
    if (interruptible && this.pendingWake) return Promise.resolve();
    this.backingOff = backingOff;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.backingOff = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = () => {
        if (this.stopped || interruptible) done();
      };
    });
  }
}
