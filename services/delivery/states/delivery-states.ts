// GetDeliveryStates: a subscription's pause, lowered cap and blocked head. A
// subscription counts as the owner's when the owner has a delivery of it (the
// delivery service keeps no subscriptions); other ids, and those with nothing
// to show, are left out.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { GetDeliveryStatesRequest } from "../../../gen/bizcard/delivery/v1/delivery_pb.js";
import { readOwner } from "../../shared/owner.js";
import { invalid } from "../../shared/validation.js";
import { orderedHeadSql } from "../deliveries/ordered-head.js";

const S = `"delivery"`;
/** The most ids one call reads (a page of subscriptions). */
const MAX_STATE_IDS = 100;

interface StateRow {
  subscription_id: string;
  throttled_until: Date | string | null;
  in_flight_cap: number | null;
  blocked_since: Date | string | null;
  blocked_delivery_id: string | null;
}

/**
 * One statement: per owned subscription, throttled_until (a pause still
 * ahead), in_flight_cap (while lowered) and its ordered head when blocked:
 * since its first failed attempt after its last other outcome (a head
 * recovered after giving up counts from its new failure).
 */
const STATES_SQL = `with "ids" as (
    select distinct i::bigint as "subscription_id" from jsonb_array_elements_text(?::jsonb) as i
  ), "owned" as (
    select i."subscription_id" from "ids" i
     where exists (select 1 from ${S}."delivery" d where d."organisation_id" = ? and d."client_id" = ? and d."subscription_id" = i."subscription_id")
  ), "pause" as (
    select p."subscription_id", case when p."paused_until" > now() then p."paused_until" end as "throttled_until", p."in_flight_cap"
      from ${S}."subscription_pause" p join "owned" o on o."subscription_id" = p."subscription_id"
     where p."paused_until" > now() or p."in_flight_cap" is not null
  ), "head" as (
    select o."subscription_id", h."id"
      from "owned" o cross join lateral (${orderedHeadSql(`o."subscription_id"`)}) h
  ), "blocked" as (
    select h."subscription_id", h."id" as "blocked_delivery_id", f."since" as "blocked_since"
      from "head" h cross join lateral (
        select min(a."attempted_at") as "since" from ${S}."delivery_attempt" a
         where a."delivery_id" = h."id" and a."organisation_id" = ? and a."client_id" = ? and a."outcome" = 'failed'
           and a."attempted_at" > coalesce((
             select max(x."attempted_at") from ${S}."delivery_attempt" x
              where x."delivery_id" = h."id" and x."organisation_id" = ? and x."client_id" = ? and x."outcome" <> 'failed'
           ), '-infinity')
      ) f
     where f."since" is not null
  )
  select coalesce(p."subscription_id", b."subscription_id")::text as "subscription_id", p."throttled_until", p."in_flight_cap",
    b."blocked_since", b."blocked_delivery_id"::text as "blocked_delivery_id"
    from "pause" p full join "blocked" b on b."subscription_id" = p."subscription_id"
   order by 1`;

const toDate = (v: Date | string) => (v instanceof Date ? v : new Date(v));

export function createDeliveryStates(deps: { orm: MikroORM }) {
  return async (req: GetDeliveryStatesRequest) => {
    const owner = readOwner(req.owner);
    if (req.subscriptionIds.length > MAX_STATE_IDS) throw invalid("subscription_ids", `at most ${MAX_STATE_IDS}`);
    const ids = req.subscriptionIds.filter((id) => id > 0n).map(String);
    if (ids.length === 0) return { states: [] };
    const o = [owner.organisationId, owner.clientId];
    const rows = await deps.orm.em.fork().execute<StateRow[]>(STATES_SQL, [JSON.stringify(ids), ...o, ...o, ...o]);
    return {
      states: rows.map((r) => ({
        subscriptionId: BigInt(r.subscription_id),
        ...(r.throttled_until ? { throttledUntil: timestampFromDate(toDate(r.throttled_until)) } : {}),
        inFlightCap: r.in_flight_cap ?? 0,
        ...(r.blocked_since ? { blockedSince: timestampFromDate(toDate(r.blocked_since)) } : {}),
        blockedDeliveryId: r.blocked_delivery_id ? BigInt(r.blocked_delivery_id) : 0n,
      })),
    };
  };
}
