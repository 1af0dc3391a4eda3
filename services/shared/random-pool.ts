// Random bytes from a pool filled at once by the CSPRNG: one system call
// (getrandom, which costs about 10 µs on this VM) for many values instead of
// one per value. Each byte is handed out once: the offset only moves forward,
// and the pool is refilled, never reread.
import { randomFillSync } from "node:crypto";

const POOL = Buffer.alloc(4096);
let offset = POOL.length;

/** `bytes` (at most 4,096) fresh random bytes, encoded. */
export function pooledRandom(bytes: number, encoding: "hex" | "base64url"): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  return POOL.toString(encoding, offset, (offset += bytes));
}
