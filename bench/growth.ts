// Growth (issue 16): the same rows on a second platform whose tables are
// large (growth-rows.ts). The rows are made with SQL in its database, not through the API
// (a million tokens through the token endpoint would take minutes), as a
// deployment's history would leave them: live (unexpired) access tokens of
// many clients and organisations, and finished deliveries with their event
// body and attempt, recent enough that the pruning keeps them. Then VACUUM
// ANALYZE, as autovacuum would have done by then (this machine's PostgreSQL
// runs with it off), so the planner sees the sizes.
import type pg from "pg";
import { uuidV7Sql } from "../services/delivery/deliveries/uuid-v7-sql.js";
import { withClient } from "./pipeline-vacuum.js";

/**
 * BENCH_GROWTH_TOKENS / BENCH_GROWTH_DELIVERIES change the counts; 0 seeds
 * nothing, a control: two platforms alike, to see how much a figure moves
 * between two passes taken in turns on this machine.
 */
export const GROWTH_TOKENS = Number(process.env.BENCH_GROWTH_TOKENS ?? 1_000_000);
export const GROWTH_DELIVERIES = Number(process.env.BENCH_GROWTH_DELIVERIES ?? 100_000);

/**
 * A CHECKPOINT after the seeding: its hundreds of MB of WAL would otherwise
 * start one during the next row, whose fsyncs then stall every commit (one
 * run: 200/s p95 9 ms before, 99 ms right after the seeding). A deployment's
 * history arrives over months, not in one statement. Needs a superuser (as
 * the bench connects here); without one, the row runs as it is.
 */
async function settle(client: pg.Client): Promise<void> {
  await client.query("checkpoint").catch(() => undefined);
}

/**
 * `count` access tokens (auth.access_token) of 1,000 clients of 10,000
 * organisations, each expiring within the next two hours; random hashes,
 * so the primary key's index is as scattered as real token hashes make it.
 */
export async function seedAccessTokens(databaseUrl: string, count = GROWTH_TOKENS): Promise<number> {
  const started = performance.now();
  await withClient(databaseUrl, async (client) => {
    await client.query(
      `insert into "auth"."access_token" ("hash", "client_id", "organisation_id", "member_id", "grant_id", "family", "scopes", "audience", "created_at", "expires_at")
       select encode(sha256(('growth-' || i)::bytea), 'base64'), 'growth-client-' || (i % 1000),
              ('00000000-0000-4000-8000-' || lpad(to_hex(i % 10000), 12, '0'))::uuid, null, null, null,
              '["organisation:read"]'::jsonb, 'api', now() - interval '10 minutes', now() + (i % 7200) * interval '1 second' + interval '10 minutes'
       from generate_series(1, $1::int) as i`,
      [count],
    );
    await client.query(`vacuum analyze "auth"."access_token"`);
    await settle(client);
  });
  return performance.now() - started;
}

/**
 * `count` finished deliveries (delivery.delivery, succeeded) of 1,000
 * subscriptions, each with its event's body (delivery.delivery_event) and one
 * attempt (delivery.delivery_attempt), made over the last hour; their ids
 * time-ordered (UUIDv7) from that time, as the platform makes them
 * (uuid's v7(), and services/delivery/deliveries/uuid-v7-sql.ts in SQL).
 */
export async function seedDeliveries(databaseUrl: string, count = GROWTH_DELIVERIES): Promise<number> {
  const started = performance.now();
  await withClient(databaseUrl, async (client) => {
    await client.query("begin");
    await client.query(
      `create temporary table growth on commit drop as
       select i, ${uuidV7Sql("at")} as event_id, subscription_id, organisation_id, at
       from (select i, 900000000 + (i % 1000) as subscription_id,
                    ('00000000-0000-4000-9000-' || lpad(to_hex(i % 1000), 12, '0'))::uuid as organisation_id,
                    now() - interval '1 hour' + (i % 3600) * interval '1 second' as at
             from generate_series(1, $1::int) as i) as s`,
      [count],
    );
    await client.query(
      `insert into "delivery"."delivery_event" ("event_id", "event_type", "organisation_id", "body", "stream_sequence", "created_at", "traceparent")
       select event_id, 'contact.created', organisation_id,
              json_build_object('type', 'contact.created', 'timestamp', at, 'data', json_build_object('id', gen_random_uuid(), 'name', 'Growth ' || i, 'email', 'growth' || i || '@example.com'))::text,
              null, at, null
       from growth`,
    );
    await client.query(
      `insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "attempts", "next_attempt_at", "claim_id", "once", "last_response_status", "last_error", "created_at", "updated_at", "ordered", "stream_sequence")
       select event_id, subscription_id, organisation_id, 'growth-client', 'contact.created', 'succeeded', 1, null, null, false, 200, '', at, at, false, null
       from growth`,
    );
    await client.query(
      `insert into "delivery"."delivery_attempt" ("id", "organisation_id", "client_id", "event_id", "subscription_id", "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "delivery_id", "event_type", "next_attempt_at")
       select ${uuidV7Sql('d."updated_at"')}, d."organisation_id", d."client_id", d."event_id", d."subscription_id", 1, 200, 'succeeded', '', 12, d."updated_at", d."id", d."event_type", null
       from "delivery"."delivery" d join growth g using ("event_id")`,
    );
    await client.query("commit");
    for (const table of ["delivery_event", "delivery", "delivery_attempt"])
      await client.query(`vacuum analyze "delivery"."${table}"`);
    await settle(client);
  });
  return performance.now() - started;
}

/** How much a figure fell with the tables grown, in percent (negative: it rose); `higherIsBetter` for rates, not for latencies. */
export function fall(before: number, after: number, higherIsBetter: boolean): number {
  return higherIsBetter ? ((before - after) / before) * 100 : ((after - before) / before) * 100;
}
