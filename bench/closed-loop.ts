// A closed loop: `inFlight` callers, each issuing its next call as soon as
// the previous one answered, for `seconds`. Calls/s and median latency.
export interface LoopResult {
  perSecond: number;
  medianMs: number;
}

export async function closedLoop(call: () => Promise<unknown>, inFlight: number, seconds: number): Promise<LoopResult> {
  // Warm-up: connections opened, code paths compiled.
  for (let i = 0; i < 50; i++) await call();
  const latencies: number[] = [];
  const started = performance.now();
  const end = started + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      await call();
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / elapsed, medianMs: latencies[Math.floor(latencies.length / 2)] ?? NaN };
}
