// Random bytes from a pool filled at once by the CSPRNG: one system call
// (getrandom, which costs about 10 µs on this VM) for many values instead of
// one per value. Each byte is handed out once: the offset only moves forward,
// and the pool is refilled, never reread.
import { randomFillSync } from "node:crypto";

const POOL = Buffer.alloc(4096);
let offset = POOL.length;

/** The pool's next `bytes` (at most 4,096) bytes, refilled first when fewer are left. */
function take(bytes: number): number {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const at = offset;
  offset += bytes;
  return at;
}

/** `bytes` (at most 4,096) fresh random bytes, encoded. */
export function pooledRandom(bytes: number, encoding: "hex" | "base64url"): string {
  const at = take(bytes);
  return POOL.toString(encoding, at, at + bytes);
}

/** `bytes` (at most 4,096) fresh random bytes: a view of the pool, to be read at once (the pool is refilled in place). */
export function pooledRandomBytes(bytes: number): Uint8Array {
  const at = take(bytes);
  return POOL.subarray(at, at + bytes);
}
