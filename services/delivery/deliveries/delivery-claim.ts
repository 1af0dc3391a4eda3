// The workers' claim: due deliveries, at most a cap in flight per
// subscription across every delivery process, handed out round the owners.
//
// The cap is counted from the rows themselves (pending, claimed, lease not
// run out), so nothing has to be kept in step: a worker that dies holds its
// subscription's slots only until its claim lease ends. A count read in the
// claim's own statement would be that statement's snapshot, blind to a claim
// another process is committing at that moment; so claims take turns on one
// transaction-level advisory lock, and each counts (in a statement that
// starts after the lock is granted) what every earlier claim committed. A
// claim is one short statement, so the turns are short.
import type { MikroORM } from "@mikro-orm/postgresql";
import { randomUUID } from "node:crypto";
import { orderedHeadSql } from "./ordered-head.js";

const S = `"delivery"`;

export interface ClaimOptions {
  limit: number;
  leaseSeconds: number;
  /** The most deliveries of one subscription claimed at once (in every process); undefined: no cap. */
  maxInFlightPerSubscription?: number;
  /**
   * The fan-out's watermark: a stream sequence at or below which every event
   * is recorded (the fan-out consumer's ack floor); an ordered delivery of a
   * later event is not sent yet. Undefined: no watermark (the in-process bus:
   * one fan-out, in order).
   */
  watermark?: number;
}

/**
 * The end of a claiming statement: the rows of CTE `ids` (a column "id")
 * claimed for a lease (two parameters: the lease in seconds, the claim id),
 * returned with what the worker sends (claimedOf, delivery-store.ts). Shared
 * by the claim and the hand-on (hand-on.ts), both a WITH list that this
 * continues. The event's body and trace headers come from one probe of
 * delivery_event per row (a left join: a row whose event is gone is claimed
 * with an empty body).
 */
export function claimRowsSql(ids: string): string {
  return `, "claimed" as (
         update ${S}."delivery" d
            set "next_attempt_at" = now() + make_interval(secs => ?), "claim_id" = ?, "attempts" = d."attempts" + 1, "updated_at" = now()
           from ${ids} where d."id" = ${ids}."id"
         returning d."id", d."event_id", d."subscription_id", d."organisation_id", d."client_id", d."event_type", d."attempts", d."once", d."ordered"
       )
       select c."id"::text as "id", c."event_id", c."subscription_id"::text as "subscription_id", c."organisation_id", c."client_id",
         c."event_type", c."attempts", c."once", c."ordered", e."body", e."traceparent", e."tracestate"
         from "claimed" c left join ${S}."delivery_event" e on e."event_id" = c."event_id"`;
}

/**
 * The deliveries held now (claimed, lease running) in every process, and the
 * subscriptions at their cap: holding as many as the claim lets them have,
 * their own lowered cap (subscription_pause.in_flight_cap) or else `cap`,
 * and 1 for an ordered subscription's rows (one at a time).
 */
export async function inFlightNow(
  orm: MikroORM,
  cap: number,
): Promise<{ deliveries: number; subscriptionsAtCap: number }> {
  const [row] = await orm.em.fork().execute<{ deliveries: number; at_cap: number }[]>(
    `select coalesce(sum(h."n"), 0)::int as "deliveries",
       count(*) filter (where h."n" >= least(coalesce(p."in_flight_cap", ?::int), case when h."ordered" then 1 end))::int as "at_cap" from (
       select "subscription_id", count(*) as "n", bool_or("ordered") as "ordered" from ${S}."delivery"
        where "status" = 'pending' and "claim_id" is not null and "next_attempt_at" > now()
        group by "subscription_id"
     ) as h left join ${S}."subscription_pause" p on p."subscription_id" = h."subscription_id"`,
    [cap],
  );
  return { deliveries: row?.deliveries ?? 0, subscriptionsAtCap: row?.at_cap ?? 0 };
}

/** The claims' turns: one transaction-level advisory lock. */
const CLAIM_LOCK = `select pg_advisory_xact_lock(hashtextextended('delivery.claim', 0));`;

/** The claim's statement (claimDue), its values: cap, limit, cap, watermark, watermark, limit, lease seconds, claim id. */
export const CLAIM_SQL = `with recursive "subs" as (
         (select d."subscription_id" from ${S}."delivery" d where d."status" = 'pending' order by d."subscription_id" limit 1)
         union all
         select (select d."subscription_id" from ${S}."delivery" d
                  where d."status" = 'pending' and d."subscription_id" > s."subscription_id" order by d."subscription_id" limit 1)
           from "subs" s where s."subscription_id" is not null
       ), "in_flight" as (
         select "subscription_id", count(*)::int as "n" from ${S}."delivery"
          where "status" = 'pending' and "claim_id" is not null and "next_attempt_at" > now()
          group by "subscription_id"
       ), "slots" as (
         select s."subscription_id", coalesce(f."n", 0) as "held", h."id" as "head_id",
           case when ?::int is null then ?::int else greatest(coalesce(p."in_flight_cap", ?::int) - coalesce(f."n", 0), 0) end as "free"
           from "subs" s
           left join "in_flight" f on f."subscription_id" = s."subscription_id"
           left join ${S}."subscription_pause" p on p."subscription_id" = s."subscription_id"
           left join lateral (${orderedHeadSql(`s."subscription_id"`)}) h on true
          where s."subscription_id" is not null and (p."paused_until" is null or p."paused_until" <= now())
       ), "offered" as (
         select c.* from "slots" sl cross join lateral (
           select d."id", d."organisation_id", d."client_id", d."subscription_id", d."next_attempt_at" from ${S}."delivery" d
            where sl."head_id" is null and d."subscription_id" = sl."subscription_id" and d."status" = 'pending' and d."next_attempt_at" <= now()
            order by d."next_attempt_at", d."id" limit sl."free"
         ) c
         union all
         select d."id", d."organisation_id", d."client_id", d."subscription_id", d."next_attempt_at"
           from "slots" sl join ${S}."delivery" d on d."id" = sl."head_id"
          where sl."held" = 0 and d."next_attempt_at" <= now()
            and (?::bigint is null or d."stream_sequence" is null or d."stream_sequence" <= ?::bigint)
       ), "candidate" as (
         select o."id", o."next_attempt_at",
           row_number() over (partition by o."organisation_id", o."client_id" order by o."turn", o."next_attempt_at", o."id") as "round"
           from (select *, row_number() over (partition by "subscription_id" order by "next_attempt_at", "id") as "turn" from "offered") o
       ), "due" as (
         select d."id" from ${S}."delivery" d
          where d."id" in (select c."id" from "candidate" c order by c."round", c."next_attempt_at", c."id" limit ?)
            and d."status" = 'pending' and d."next_attempt_at" <= now()
            for update skip locked
       )
       ${claimRowsSql(`"due"`)}`;

/**
 * Claims up to `limit` due rows: FOR UPDATE SKIP LOCKED, so a row a manual
 * retry holds is passed over; the claim moves next_attempt_at a lease ahead,
 * so a dead worker's rows come back then.
 *
 * The work is per subscription, never per queued row, so a claim costs the
 * same with a backlog of ten or of a hundred thousand: the subscriptions with
 * pending deliveries are found by a loose index scan (one probe of
 * delivery_pending_index each, "subs"), and each gives at most its free slots
 * (cap - in flight) of its oldest due rows, read from the same index. The
 * candidates are then ranked within their owner (organisation, client
 * application) by their turn in their subscription, and the claim takes every
 * owner's first before any owner's second: an owner with a long queue does
 * not hold back another's event that just came. A subscription its target
 * throttled (subscription_pause) has no candidates until its paused_until,
 * and its own in_flight_cap, when set, in place of the configured cap.
 *
 * Ordered delivery (rows marked "ordered" by the fan-out): a subscription
 * with a pending ordered row gives only its head (orderedHeadSql: the oldest
 * pending one, so a head waiting for its retry holds back those behind it,
 * and once it succeeds or gives up the next is the head), only while nothing
 * of it is in flight (one at a time, whatever the cap), and only when its
 * event is at or below the fan-out's watermark: with several fan-out
 * processes a later batch can be recorded before an earlier one, and the head
 * must not be a later event whose earlier ones are not recorded yet. The
 * watermark was read before this statement started, and the fan-out
 * acknowledges a batch only after its rows committed: so this statement sees
 * every row of every event at or below it, and a head at or below it is
 * truly the oldest. (A subscription switched from ordered to unordered stays
 * one at a time until the rows recorded as ordered are done.)
 */
export async function claimDue(
  orm: MikroORM,
  o: ClaimOptions,
): Promise<{ claimId: string; rows: Record<string, unknown>[] }> {
  const claimId = randomUUID();
  const cap = o.maxInFlightPerSubscription ?? null;
  const values = [cap, o.limit, cap, o.watermark ?? null, o.watermark ?? null, o.limit, o.leaseSeconds, claimId];
  // The lock, then the claim, in ONE simple query (MikroORM writes the values into the text; the
  // simple protocol takes no parameters): one round trip, one implicit transaction (committed after
  // the claim, rolled back whole if it fails), and the claim's statement starts, with a snapshot of
  // its own, once the lock is granted. A transaction of its own would wait for this process's event
  // loop between its statements (BEGIN, the lock, the claim, COMMIT), with the lock held.
  const [, rows = []] = await orm.em
    .getConnection()
    .execute<Record<string, unknown>[][]>(`${CLAIM_LOCK}\n${CLAIM_SQL}`, values);
  return { claimId, rows };
}
