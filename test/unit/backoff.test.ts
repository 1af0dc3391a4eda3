// The one back-off helper (services/shared/loop/backoff.ts) and the one loop
// shape (poll-loop.ts). Pure, on fake timers: no database.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backoffDelay, withJitter } from "../../services/shared/loop/backoff.js";
import { PollLoop } from "../../services/shared/loop/poll-loop.js";

describe("backoffDelay", () => {
  it("doubles from the base after each failure, up to the cap", () => {
    const b = { baseMs: 500, maxMs: 30_000 };
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100].map((n) => backoffDelay(n, b))).toEqual([
      500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it("keeps the formulas it replaced: the relay's and worker's, the bus redeliveries', the no-consumer wait", () => {
    for (let failures = 1; failures <= 12; failures++) {
      expect(backoffDelay(failures, { baseMs: 500, maxMs: 30_000 })).toBe(
        Math.min(30_000, 250 * 2 ** Math.min(failures, 7)),
      );
      expect(backoffDelay(failures, { baseMs: 250, maxMs: 5000 })).toBe(
        Math.min(5000, 250 * 2 ** Math.min(failures - 1, 5)),
      );
      expect(backoffDelay(failures, { baseMs: 1000, maxMs: 60_000 })).toBe(
        Math.min(60_000, 1000 * 2 ** Math.min(failures - 1, 30)),
      );
    }
  });

  it("never overflows past the cap, and counts anything below 1 as the first failure", () => {
    expect(backoffDelay(5000, { baseMs: 1, maxMs: 7 })).toBe(7);
    expect(backoffDelay(0, { baseMs: 300, maxMs: 1000 })).toBe(300);
    expect(backoffDelay(-3, { baseMs: 300, maxMs: 1000 })).toBe(300);
  });

  it("jitters within ± the fraction, around the capped value", () => {
    const b = { baseMs: 1000, maxMs: 4000, jitter: 0.2 };
    expect(backoffDelay(1, b, () => 0)).toBe(800);
    expect(backoffDelay(1, b, () => 0.5)).toBe(1000);
    expect(backoffDelay(1, b, () => 1)).toBeCloseTo(1200, 6);
    expect(backoffDelay(9, b, () => 1)).toBeCloseTo(4800, 6);
    for (let i = 0; i < 200; i++) {
      const ms = backoffDelay(2, b);
      expect(ms).toBeGreaterThanOrEqual(1600);
      expect(ms).toBeLessThanOrEqual(2400);
    }
    expect(withJitter(5000, 0.2, () => 0)).toBe(4000);
  });
});

describe("PollLoop", () => {
  // The loop's waits are timers: on fake ones a test moves the clock to just short of a wait's end and sees that
  // nothing happened yet, then past it. Advancing also runs the promise callbacks due, so every step is settled.
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs rounds back to back while they ask for 0, waits what they ask for otherwise, and stops after the round in hand", async () => {
    const starts: number[] = [];
    let inRound = false;
    const loop = new PollLoop({
      round: async () => {
        inRound = true;
        starts.push(Date.now());
        // Each round takes 5 ms of the (fake) clock.
        await new Promise<void>((done) => setTimeout(done, 5));
        inRound = false;
        return starts.length < 3 ? 0 : 10_000;
      },
      backoff: { baseMs: 1000, maxMs: 1000 },
      onError: () => undefined,
    });
    loop.start();
    // Three rounds of 5 ms are over well within a second; the third asked for 10 s.
    await vi.advanceTimersByTimeAsync(1000);
    expect(starts).toHaveLength(3);
    // Back to back: each starts as the one before ends (a fake clock counts at most 1 ms for the yield between).
    expect(starts[1]! - (starts[0]! + 5)).toBeLessThanOrEqual(1);
    expect(starts[2]! - (starts[1]! + 5)).toBeLessThanOrEqual(1);
    // 1 ms short of the 10 s after the third ended: no fourth round.
    await vi.advanceTimersByTimeAsync(starts[2]! + 5 + 10_000 - 1 - Date.now());
    expect(starts).toHaveLength(3);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    // The long wait is cut short by stop(): it returned with no time passing.
    expect(stopped).toBe(true);
    await stopping;
    expect(starts).toHaveLength(3);
    expect(inRound).toBe(false);
    expect(loop.active).toBe(false);
  });

  it("wake() ends a poll wait; a wake during a round starts the next one at once", async () => {
    let rounds = 0;
    let wakeDuringRound = false;
    const loop = new PollLoop({
      round: async () => {
        rounds++;
        if (wakeDuringRound) {
          wakeDuringRound = false;
          loop.wake();
        }
        return 60_000;
      },
      backoff: { baseMs: 1000, maxMs: 1000 },
      onError: () => undefined,
    });
    loop.start();
    // 1 ms short of the poll wait: no second round without a wake.
    await vi.advanceTimersByTimeAsync(60_000 - 1);
    expect(rounds).toBe(1);
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(rounds).toBe(2);
    wakeDuringRound = true;
    loop.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(rounds).toBe(4);
    await loop.stop();
  });

  it("backs off after failed rounds, growing, and reports each wait; a success starts over", async () => {
    const waits: number[] = [];
    let calls = 0;
    const loop = new PollLoop({
      round: async () => {
        calls++;
        if (calls <= 3 || calls === 5) throw new Error(`failure ${calls}`);
        return calls === 4 ? 0 : 60_000;
      },
      backoff: { baseMs: 10, maxMs: 25 },
      onError: (_err, retryInMs) => waits.push(retryInMs),
    });
    loop.start();
    // Past the four back-offs (65 ms in all), short of the sixth round's 60 s poll wait.
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(6);
    await loop.stop();
    expect(waits).toEqual([10, 20, 25, 10]);
  });

  it("a wake does not end a failure back-off unless wakeEndsBackoff", async () => {
    for (const wakeEndsBackoff of [false, true]) {
      let calls = 0;
      const loop = new PollLoop({
        round: async () => {
          calls++;
          throw new Error("down");
        },
        backoff: { baseMs: 60_000, maxMs: 60_000 },
        onError: () => undefined,
        wakeEndsBackoff,
      });
      loop.start();
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toBe(1);
      loop.wake();
      // Settled with no time passing: only the wake can have started another round.
      await vi.advanceTimersByTimeAsync(0);
      expect(calls).toBe(wakeEndsBackoff ? 2 : 1);
      await loop.stop();
    }
  });
});
