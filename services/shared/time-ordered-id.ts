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

/**
 * A new UUIDv7 (the uuid package's): the ms, then a 32-bit counter that
 * starts at random each millisecond (RFC 9562 §6.2's counter: ids made by one
 * process sort in the order they were made), then 42 random bits.
 */
export function timeOrderedId(): string {
  return v7();
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
