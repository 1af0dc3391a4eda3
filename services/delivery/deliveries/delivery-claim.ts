// The workers' claim: due deliveries, at most a cap in flight per
// subscription across every delivery process, handed out round the owners.
// The cap is counted from the rows themselves (pending, claimed, lease
// running), so a dead worker holds its slots only until its lease ends. Claims
// take turns on one advisory lock: a count in the claim's own snapshot would
// miss a claim another process is committing.
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
   * The stream sequence at or below which every event is recorded (the
   * fan-out's ack floor); undefined: the in-process bus.
   */
  watermark?: number;
}

/**
 * The end of a claiming statement (the claim's and the hand-on's WITH list):
 * the rows of CTE `ids` claimed for a lease (parameters: lease seconds, claim
 * id), returned with their event's body and trace headers (a left join: a row
 * whose event is gone is claimed with an empty body).
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
 * subscriptions at their cap (their lowered cap, `cap`, or 1 when ordered).
 */
export async function inFlightNow(orm: MikroORM, cap: number) {
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

/**
 * The claim's statement (claimDue), its values: cap, limit, cap, watermark, watermark, limit, lease seconds, claim id.
 */
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
 * Claims up to `limit` due rows (FOR UPDATE SKIP LOCKED; the lease moves
 * next_attempt_at ahead, so a dead worker's rows come back then).
 *
 * The work is per subscription, never per queued row: a loose index scan finds
 * the subscriptions with pending rows ("subs"), each gives at most its free
 * slots of its oldest due rows, and the candidates are ranked within their
 * owner, every owner's first before any owner's second, so a long queue does
 * not hold back another owner's new event. A paused subscription gives none.
 *
 * An ordered subscription gives only its head (orderedHeadSql), only while
 * nothing of it is in flight, and only at or below the fan-out's watermark:
 * the fan-out acknowledges a batch after its rows commit, so a head at or
 * below it is truly the oldest.
 */
export async function claimDue(orm: MikroORM, o: ClaimOptions) {
  const claimId = randomUUID();
  const cap = o.maxInFlightPerSubscription ?? null;
  const values = [cap, o.limit, cap, o.watermark ?? null, o.watermark ?? null, o.limit, o.leaseSeconds, claimId];
  // The lock, then the claim, in ONE simple query: one round trip and one implicit transaction, and the
  // claim's snapshot is taken once the lock is granted. An explicit transaction would hold the lock
  // across this process's event loop between its statements.
  const [, rows = []] = await orm.em
    .getConnection()
    .execute<Record<string, unknown>[][]>(`${CLAIM_LOCK}\n${CLAIM_SQL}`, values);
  return { claimId, rows };
}
