// Member passwords: scrypt from node:crypto, a random salt per password, the
// parameters stored with the hash. OWASP Password Storage Cheat Sheet: "use
// scrypt with a minimum CPU/memory cost parameter of (2^17), a minimum block
// size of 8 (1024 bytes), and a parallelization parameter of 1 (as
// alternatives, … 2^14 with 5 …)." N = 2^14 with p = 5 is the same defence in
// an eighth of the memory, which would otherwise set the platform's peak.
// A hash made with other parameters still verifies; needsRehash says so, and a
// successful login stores a new one (organisation-service.ts).
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";
import pLimit from "p-limit";

export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}

/** What every new hash uses. */
export const SCRYPT_COST: Readonly<ScryptCost> = { N: 2 ** 14, r: 8, p: 5 };

const KEY_LENGTH = 32;
const SALT_LENGTH = 16;

/**
 * What a stored hash may ask for. A hash outside these bounds, or one whose
 * derivation would need more than twice the memory of OWASP's first choice,
 * never matches, so a corrupt row cannot make a login allocate gigabytes.
 */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

/**
 * Memory one derivation needs, as OpenSSL's EVP_PBE_scrypt counts it (node's default maxmem is too small for N = 2^17).
 */
const scryptMemory = ({ N, r, p }: ScryptCost) => 128 * r * (N + p + 2);

const MAX_MEMORY = 2 * scryptMemory({ N: 2 ** 17, r: 8, p: 1 });

/**
 * Derivations that run at once, each on one of libuv's pool threads (shared
 * with DNS lookups and file I/O): two keep pool threads free, and on two cores
 * more would not finish sooner anyway.
 */
const limited = pLimit(2);

/**
 * Derivations that may wait for a turn. More would wait past any caller's
 * deadline: a flood of logins is refused at once (ResourceExhausted, 429)
 * instead of queueing work nobody waits for.
 */
export const MAX_WAITING_DERIVATIONS = 16;

/** Too many password checks at once; the caller may try again shortly. */
export class PasswordQueueFullError extends Error {
  constructor() {
    super("too many password checks at once");
    this.name = "PasswordQueueFullError";
  }
}

function derive(
  password: string,
  salt: Buffer,
  cost: ScryptCost,
  keyLength: number,
  signal?: AbortSignal,
): Promise<Buffer> {
  if (limited.pendingCount >= MAX_WAITING_DERIVATIONS) return Promise.reject(new PasswordQueueFullError());
  return limited(() => {
    // A caller that gave up (deadline, disconnect) while this waited: skip the work.
    signal?.throwIfAborted();
    return new Promise<Buffer>((resolve, reject) =>
      scrypt(password.normalize("NFKC"), salt, keyLength, { ...cost, maxmem: scryptMemory(cost) }, (err, key) =>
        err ? reject(err) : resolve(key),
      ),
    );
  });
}

/** scrypt$N$r$p$salt$hash (salt and hash in base64). */
export async function hashPassword(
  password: string,
  cost: ScryptCost = SCRYPT_COST,
  signal?: AbortSignal,
): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await derive(password, salt, cost, KEY_LENGTH, signal);
  return `scrypt$${cost.N}$${cost.r}$${cost.p}$${salt.toString("base64")}$${key.toString("base64")}`;
}

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0;
const inRange = (n: number, max: number) => Number.isInteger(n) && n >= 1 && n <= max;

function parse(encoded: string): { cost: ScryptCost; salt: Buffer; key: Buffer } | undefined {
  const [scheme, n, r, p, salt, key, ...rest] = encoded.split("$");
  if (scheme !== "scrypt" || !salt || !key || rest.length) return undefined;
  const cost = { N: Number(n), r: Number(r), p: Number(p) };
  if (!isPowerOfTwo(cost.N) || cost.N > MAX_N || !inRange(cost.r, MAX_R) || !inRange(cost.p, MAX_P)) return undefined;
  if (scryptMemory(cost) > MAX_MEMORY) return undefined;
  const parsed = { cost, salt: Buffer.from(salt, "base64"), key: Buffer.from(key, "base64") };
  if (parsed.salt.length === 0 || parsed.key.length < 16 || parsed.key.length > 64) return undefined;
  return parsed;
}

/** Constant time in the key comparison; a malformed hash never matches. */
export async function verifyPassword(password: string, encoded: string, signal?: AbortSignal): Promise<boolean> {
  const parsed = parse(encoded);
  if (!parsed) return false;
  const actual = await derive(password, parsed.salt, parsed.cost, parsed.key.length, signal);
  return timingSafeEqual(actual, parsed.key);
}

/** True when a (verified) hash was made with other parameters than SCRYPT_COST or a shorter key. */
export function needsRehash(encoded: string): boolean {
  const parsed = parse(encoded);
  if (!parsed) return false;
  const { N, r, p } = parsed.cost;
  return N !== SCRYPT_COST.N || r !== SCRYPT_COST.r || p !== SCRYPT_COST.p || parsed.key.length < KEY_LENGTH;
}

/**
 * A hash of a random password: an unknown email is checked against it so that
 * it costs the same time as a known one (no user enumeration). Made once; the
 * organisation app makes it while it starts, so no login pays for it.
 */
let dummy: Promise<string> | undefined;
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString("hex"));
  return dummy;
}

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 1024;
