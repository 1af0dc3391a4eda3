// UUIDv7 made by PostgreSQL, for rows an INSERT … SELECT makes (a worker's
// attempts of claimed rows): the same layout as uuid's v7(), which the rows
// made in this process take. Time-ordered keys keep a B-tree's inserts at its
// right-hand edge (RFC 9562 §6.10), where a random UUIDv4 lands on any leaf
// page and dirties one of its own.
//
// Hand-written: PostgreSQL before 18 has no uuidv7(), and uuid's v7() runs in
// this process, not in a statement.

/**
 * A gen_random_uuid() whose first 6 bytes become the ms of `at` (default:
 * now, as the clock reads it) and whose version nibble becomes 7 (bits 52 and
 * 53 set on top of version 4's bit 54).
 */
export function uuidV7Sql(at = "clock_timestamp()"): string {
  return `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from ${at}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;
}
