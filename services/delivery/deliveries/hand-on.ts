// Handing a slot on: the statement that records a batch of attempts
// (attempt-record.ts) also claims, for each subscription with successful
// attempts in the batch, as many of its next due rows, so a busy
// subscription's slot goes from one POST to the next without waiting for a
// separate claim (its turn on the claim lock, its own round trips). A slot
// cycle is then the POST and one statement, so a busy subscription's pace is
// set by its target's answers rather than by the claims.
//
// The per-subscription cap still holds across processes without the claim's
// lock: a hand-on never raises the subscription's count of rows in flight
// (each row it claims replaces one this same statement releases), so every
// claim, whichever of this statement's snapshots it counted, counts no fewer
// than the rows that will be in flight. Where the cap was lowered meanwhile
// (subscription_pause.in_flight_cap), fewer are handed on: the count after
// the release, read in this statement, is kept under the lowered cap.
//
// Not handed on (the slot is freed, the next claim decides): a failed attempt
// (its subscription's answers may pause or halve it, attempt-record.ts), a
// paused subscription, and an ordered one (its head is the claim's to pick,
// against the fan-out's watermark: delivery-claim.ts). Fairness across owners
// stays the claim's: the worker hands on only while its last claim left slots
// free, i.e. no other owner's due rows were waiting for them.
import { claimRowsSql } from "./delivery-claim.js";

const S = `"delivery"`;

/**
 * The tail of recordAttempts's statement when slots are handed on: reads its
 * "updated" and "effect" CTEs; three parameters: the configured cap (null:
 * none), the lease in seconds, the claim id. Returns the claimed rows as the
 * claim does (claimRowsSql).
 */
export const handOnSql = `, "freed" as (
       select u."subscription_id", count(*) filter (where u."status" = 'succeeded')::int as "n", count(*)::int as "released"
         from "updated" u group by u."subscription_id"
     ), "open" as (
       -- Its successes, at most up to its cap: the cap less the rows still in flight once this batch's are released.
       select f."subscription_id",
         least(f."n", greatest(coalesce(p."in_flight_cap", ?::int, 1000000) - (
           select count(*)::int from ${S}."delivery" h
            where h."subscription_id" = f."subscription_id" and h."status" = 'pending' and h."claim_id" is not null and h."next_attempt_at" > now()
         ) + f."released", 0)) as "n"
         from "freed" f
         join "effect" e on e."subscription_id" = f."subscription_id"
         left join ${S}."subscription_pause" p on p."subscription_id" = f."subscription_id"
        where f."n" > 0 and e."paused_until" is null and not e."halve_cap" and e."timeouts" = 0
          and (p."paused_until" is null or p."paused_until" <= now())
          and not exists (select 1 from ${S}."delivery" o where o."subscription_id" = f."subscription_id" and o."status" = 'pending' and o."ordered")
     ), "next" as (
       select c."id" from "open" op cross join lateral (
         select d."id" from ${S}."delivery" d
          where d."subscription_id" = op."subscription_id" and d."status" = 'pending' and d."next_attempt_at" <= now()
            and d."id" not in (select i."delivery_id" from "input" i)
          order by d."next_attempt_at", d."id" limit op."n"
          for update skip locked
       ) c
     )
     ${claimRowsSql(`"next"`)}`;

/** recordAttempts's tail when nothing is handed on. */
export const NO_HAND_ON = ` select null where false`;
