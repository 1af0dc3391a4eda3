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
 * An ordered subscription's head: its oldest pending ordered delivery by
 * (stream_sequence, id), due or not, claimed or not: one row ("id") of
 * delivery_ordered_head_index. `subscriptionId` is an SQL expression (a
 * column of the outer query, for a lateral join). The one definition of the
 * head: the claim sends only it, and a subscription's blocked_since and
 * blocked_delivery_id are its row's.
 */
export function orderedHeadSql(subscriptionId: string): string {
  return `select o."id" from ${S}."delivery" o
      where o."subscription_id" = ${subscriptionId} and o."status" = 'pending' and o."ordered"
      order by o."stream_sequence", o."id" limit 1`;
}

/** The head ("id") of each ordered subscription that has a due ordered delivery (one look-up each). */
const DUE_ORDERED_HEADS_SQL = `select h."id" from (
     select distinct "subscription_id" from ${S}."delivery" where "status" = 'pending' and "ordered" and "next_attempt_at" <= now()
   ) s cross join lateral (${orderedHeadSql(`s."subscription_id"`)}) h`;

/**
 * The deliveries held now (claimed, lease running) in every process, and the
 * subscriptions at their cap: holding as many as the claim lets them have,
 * their own lowered cap (subscription_pause.in_flight_cap) or else `cap`,
 * and 1 for an ordered subscription's rows (one at a time).
 */
export async function inFlightNow(orm: MikroORM, cap: number): Promise<{ deliveries: number; subscriptionsAtCap: number }> {
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

/**
 * Claims up to `limit` due rows: FOR UPDATE SKIP LOCKED, so a row a manual
 * retry holds is passed over; the claim moves next_attempt_at a lease ahead,
 * so a dead worker's rows come back then. Each subscription's due rows are
 * ranked oldest first ("turn") and only the first (cap - in flight) are
 * candidates; the candidates are then ranked within their owner
 * (organisation, client application) by turn, and the claim takes every
 * owner's first before any owner's second: an owner with a long queue does
 * not hold back another's event that just came. A subscription its target
 * throttled (subscription_pause) has no candidates until its paused_until,
 * and its own in_flight_cap, when set, in place of the configured cap.
 *
 * Ordered delivery (a row marked "ordered" by the fan-out): such a row is a
 * candidate only when it is its subscription's head (orderedHeadSql: the
 * oldest pending one, so a head waiting for its retry holds back those
 * behind it, and once it succeeds or gives up the next is the head), nothing
 * of its subscription is in flight (so one at a time, whatever the cap), and
 * its event is at or below the fan-out's watermark: with several fan-out
 * processes a later batch can be recorded before an earlier one, and the
 * head must not be a later event whose earlier ones are not recorded yet.
 * The watermark was read before this statement started, and the fan-out
 * acknowledges a batch only after its rows committed: so this statement sees
 * every row of every event at or below it, and a head at or below it is
 * truly the oldest. Unordered rows are not affected.
 */
export async function claimDue(orm: MikroORM, o: ClaimOptions): Promise<{ claimId: string; rows: Record<string, unknown>[] }> {
  const claimId = randomUUID();
  const cap = o.maxInFlightPerSubscription ?? null;
  const rows = await orm.em.fork().transactional(async (em) => {
    await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, ["delivery.claim"]);
    return em.execute<Record<string, unknown>[]>(
      `with "in_flight" as (
         select "subscription_id", count(*)::int as "n" from ${S}."delivery"
          where "status" = 'pending' and "claim_id" is not null and "next_attempt_at" > now()
          group by "subscription_id"
       ), "head" as (
         ${DUE_ORDERED_HEADS_SQL}
       ), "ranked" as (
         select d."id", d."organisation_id", d."client_id", d."subscription_id", d."next_attempt_at", d."ordered",
           row_number() over (partition by d."subscription_id" order by d."next_attempt_at", d."id") as "turn"
           from ${S}."delivery" d where d."status" = 'pending' and d."next_attempt_at" <= now()
            and (not d."ordered" or (
              d."id" in (select "id" from "head")
              and (?::bigint is null or d."stream_sequence" is null or d."stream_sequence" <= ?::bigint)))
       ), "candidate" as (
         select r."id", r."next_attempt_at",
           row_number() over (partition by r."organisation_id", r."client_id" order by r."turn", r."next_attempt_at", r."id") as "round"
           from "ranked" r left join "in_flight" f on f."subscription_id" = r."subscription_id"
             left join ${S}."subscription_pause" p on p."subscription_id" = r."subscription_id"
          where (?::int is null or r."turn" <= coalesce(p."in_flight_cap", ?::int) - coalesce(f."n", 0))
            and (p."paused_until" is null or p."paused_until" <= now())
            and (not r."ordered" or (r."turn" = 1 and coalesce(f."n", 0) = 0))
       ), "due" as (
         select d."id" from ${S}."delivery" d
          where d."id" in (select c."id" from "candidate" c order by c."round", c."next_attempt_at", c."id" limit ?)
            and d."status" = 'pending' and d."next_attempt_at" <= now()
            for update skip locked
       )
       update ${S}."delivery" d
          set "next_attempt_at" = now() + make_interval(secs => ?), "claim_id" = ?, "attempts" = d."attempts" + 1, "updated_at" = now()
         from "due" where d."id" = "due"."id"
       returning d."id"::text as "id", d."event_id", d."subscription_id"::text as "subscription_id", d."organisation_id", d."client_id",
         d."event_type", d."attempts", d."once", d."ordered",
         (select e."body" from ${S}."delivery_event" e where e."event_id" = d."event_id") as "body",
         (select e."traceparent" from ${S}."delivery_event" e where e."event_id" = d."event_id") as "traceparent"`,
      [o.watermark ?? null, o.watermark ?? null, cap, cap, o.limit, o.leaseSeconds, claimId],
    );
  });
  return { claimId, rows };
}
