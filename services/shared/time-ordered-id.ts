// Ids of rows that are only ever appended and pile up (events, contacts,
// delivery attempts): UUIDv7, whose first 48 bits are the Unix time in ms.
//
// RFC 9562 §5.7: "UUIDv7 features a time-ordered value field derived from the
// widely implemented and well-known Unix Epoch timestamp source".
// §6.10 (DBMS and Database Considerations): time-ordered UUIDs as keys keep a
// B-tree's inserts at its right-hand edge. A random UUIDv4 lands on any leaf
// page: once an index is larger than what a checkpoint interval touches,
// nearly every insert dirties a page of its own, and the first change to each
// page after a checkpoint writes the whole page to the WAL (measured: 0.1-0.2
// full-page images an event with the delivery tables empty, 0.8 with 100,000
// deliveries stored; docs/benchmark.md, "The growth rows").
import { v7 } from "uuid";
import { pooledRandomBytes } from "./random-pool.js";

/** The last id's ms and counter (what the uuid package keeps when called without options). */
const last = { msecs: -Infinity, seq: 0 };

/**
 * A new UUIDv7 (the uuid package's layout): the ms, then a 32-bit counter
 * that starts at random each millisecond, then 42 random bits.
 *
 * RFC 9562 §6.2, Method 1: "The counter MUST be incremented for every UUID
 * generation in the same timestamp", and when it overflows "the timestamp
 * portion is incremented" (ids made by one process sort in the order they
 * were made). The package does this itself only when it also draws the
 * random bytes, through crypto.getRandomValues: one call (a getrandom system
 * call) per id, 4 % of the platform's CPU in the bench's bursts. The bytes
 * come from the shared pool instead (random-pool.ts).
 */
export function timeOrderedId(): string {
  const random = pooledRandomBytes(16);
  const now = Date.now();
  if (now > last.msecs) {
    last.msecs = now;
    // 31 random bits: room to count up within the ms.
    last.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    last.seq = (last.seq + 1) | 0;
    if (last.seq === 0) last.msecs++;
  }
  return v7({ random, msecs: last.msecs, seq: last.seq });
}

/**
 * The same made in SQL (PostgreSQL 15 has no uuidv7()): a gen_random_uuid()
 * whose first 6 bytes become the ms of `at` (default: now, as the clock
 * reads it) and whose version nibble becomes 7 (bits 52 and 53 set on top of
 * version 4's bit 54).
 */
export function timeOrderedIdSql(at = "clock_timestamp()"): string {
  return `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from ${at}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;
}
