// Handing a slot on: the statement that records a batch of attempts
// (attempt-record.ts) also claims, per subscription, as many next due rows as
// it had successes, so a busy subscription's slot goes from one POST to the
// next without a separate claim. The cap holds without the claim's lock: each
// row claimed replaces one the same statement releases, and a lowered cap
// hands on fewer. Not handed on: failures, paused subscriptions and ordered
// ones (their head is the claim's to pick).
import { claimRowsSql } from "./delivery-claim.js";

const S = `"delivery"`;

/**
 * recordAttempts's tail that hands slots on (reads "updated" and
 * "effect"); parameters: cap (null: none), lease seconds, claim id.
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
