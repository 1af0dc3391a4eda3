// UUIDv7 made by PostgreSQL (before 18 it has no uuidv7()) for rows an
// INSERT … SELECT makes, laid out as uuid's v7(): time-ordered keys keep a
// B-tree's inserts at its right-hand edge (RFC 9562 §6.10).

/** gen_random_uuid() with the ms of `at` in its first 6 bytes and version 7 (bits 52, 53 set on version 4's bit 54). */
export function uuidV7Sql(at = "clock_timestamp()"): string {
  return `encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from ${at}) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid`;
}
