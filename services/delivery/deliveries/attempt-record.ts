// Recording the workers' attempts: each with its delivery's new state, and
// what the answers ask of their subscription (subscription-pause.ts).
import type { MikroORM } from "@mikro-orm/postgresql";
import { v7 } from "uuid";
import { handOnSql } from "./hand-on.js";
import { TIMEOUT_RUN_HALVES_CAP, type Throttle } from "./subscription-pause.js";

const S = `"delivery"`;

type Row = Record<string, unknown>;

export interface ClaimedDelivery {
  id: bigint;
  eventId: string;
  subscriptionId: bigint;
  organisationId: string;
  clientId: string;
  eventType: string;
  /** This attempt's number (1 for the first). */
  attempt: number;
  once: boolean;
  ordered: boolean;
  body: string;
  claimId: string;
  /** The event's W3C trace context, if it came with one. */
  traceparent: string | undefined;
  tracestate: string | undefined;
}

export interface AttemptRecord {
  delivery: ClaimedDelivery;
  /** The delivery's state after this attempt. */
  status: "pending" | "succeeded" | "gave_up" | "gone";
  outcome: "succeeded" | "failed" | "gave_up" | "gone";
  responseStatus: number;
  error: string;
  durationMs: number;
  attemptedAt: Date;
  nextAttemptAt: Date | null;
  throttle?: Throttle;
  /** No complete answer in time: counts towards the subscription's run of timeouts. */
  timedOut?: boolean;
}

interface RecordOptions {
  /** The configured in-flight cap per subscription; undefined: none (nothing is halved). */
  cap: number | undefined;
  /** Hand the successes' slots on (hand-on.ts) under this claim; undefined: every slot is freed. */
  handOn?: { claimId: string; leaseSeconds: number };
  /** Run as a named prepared statement (real PostgreSQL only). */
  prepared?: boolean;
  /** A cap halved less than this long ago is not halved again (DELIVERY_TIMEOUT_MS). */
  halvingWindowMs: number;
}

const endOf = (a: AttemptRecord) => a.attemptedAt.getTime() + a.durationMs;

/** What one batch's attempts ask of each of their subscriptions. */
function effects(list: AttemptRecord[], o: RecordOptions) {
  const bySubscription = new Map<string, AttemptRecord[]>();
  for (const a of list) {
    const key = a.delivery.subscriptionId.toString();
    bySubscription.set(key, [...(bySubscription.get(key) ?? []), a]);
  }
  // In id order: two processes recording at once update their common subscriptions' rows in the same order.
  const ordered = [...bySubscription].sort(([a], [b]) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  return ordered.map(([id, rows]) => {
    const lastAnswer = Math.max(-Infinity, ...rows.filter((a) => a.responseStatus > 0).map(endOf));
    const timeouts = o.cap === undefined ? 0 : rows.filter((a) => a.timedOut && endOf(a) > lastAnswer).length;
    const paused = rows
      .filter((a) => a.throttle?.pausedUntil)
      .sort((x, y) => y.throttle!.pausedUntil!.getTime() - x.throttle!.pausedUntil!.getTime())[0];
    const halve = o.cap !== undefined && rows.some((a) => a.throttle?.halveCap);
    const reason =
      paused?.throttle?.reason ??
      rows.find((a) => a.throttle)?.throttle?.reason ??
      (timeouts > 0 ? `${TIMEOUT_RUN_HALVES_CAP} timeouts in a row` : null);
    return {
      subscription_id: id,
      paused_until: paused?.throttle?.pausedUntil?.toISOString() ?? null,
      // A 503 without Retry-After.
      halve_cap: halve,
      succeeded: rows.filter((a) => a.outcome === "succeeded").length,
      // An HTTP answer came: a run of timeouts ends.
      answered: lastAnswer > -Infinity,
      // Timeouts after the batch's last HTTP answer: they extend the run.
      timeouts,
      reason,
      cap: o.cap ?? null,
      window_ms: o.halvingWindowMs,
    };
  });
}

// The subscription_pause row as the answers leave it (p: the row, e: the batch's effect on it).
const RUN = `(case when e."answered" then 0 else p."timeout_run" end + e."timeouts")`;
const WANTS_HALVING = `(e."halve_cap" or ${RUN} >= ${TIMEOUT_RUN_HALVES_CAP})`;
const HALVES = `(${WANTS_HALVING} and e."cap" is not null and (p."cap_halved_at" is null or p."cap_halved_at" <= now() - e."window_ms" * interval '1 millisecond'))`;

/**
 * Several attempts in one statement: the states only where the claim is still
 * the worker's; every attempt is logged. The latest pause replaces an earlier
 * one; a halved cap is not halved again within halvingWindowMs (the POSTs in
 * flight then are the same wave); each success grows a halved cap back by
 * one, unless the batch also throttles. A subscription needing a pause row
 * gets an empty one first, in its own statement. With `o.handOn`, returns the
 * rows handed on (hand-on.ts); otherwise none.
 */
export async function recordAttempts(orm: MikroORM, list: AttemptRecord[], o: RecordOptions): Promise<Row[]> {
  if (list.length === 0) return [];
  const execute = (sql: string, params: unknown[]) => orm.em.fork().execute<Row[]>(sql, params);
  const perSubscription = effects(list, o);
  const needRow = perSubscription
    .filter((e) => e.paused_until !== null || e.halve_cap || e.timeouts > 0)
    .map((e) => e.subscription_id);
  if (needRow.length > 0) {
    await execute(
      `insert into ${S}."subscription_pause" ("subscription_id", "reason", "updated_at") select jsonb_array_elements_text(?::jsonb)::bigint, '', now()
       on conflict ("subscription_id") do nothing`,
      [JSON.stringify(needRow)],
    );
  }
  const rows = JSON.stringify(
    list.map((a) => ({
      delivery_id: a.delivery.id.toString(),
      claim_id: a.delivery.claimId,
      status: a.status,
      next_attempt_at: a.nextAttemptAt?.toISOString() ?? null,
      response_status: a.responseStatus,
      error: a.error,
      attempt_id: v7(),
      organisation_id: a.delivery.organisationId,
      client_id: a.delivery.clientId,
      event_id: a.delivery.eventId,
      subscription_id: a.delivery.subscriptionId.toString(),
      event_type: a.delivery.eventType,
      attempt: a.delivery.attempt,
      outcome: a.outcome,
      duration_ms: a.durationMs,
      attempted_at: a.attemptedAt.toISOString(),
    })),
  );
  const handOn = o.handOn ? handOnSql : " select null where false";
  const sql = `with "input" as (
       select * from jsonb_to_recordset(?::jsonb) as r("delivery_id" bigint, "claim_id" uuid, "status" text, "next_attempt_at" timestamptz,
         "response_status" int, "error" text, "attempt_id" uuid, "organisation_id" uuid, "client_id" text, "event_id" uuid,
         "subscription_id" bigint, "event_type" text, "attempt" int, "outcome" text, "duration_ms" int, "attempted_at" timestamptz)
     ), "effect" as (
       select * from jsonb_to_recordset(?::jsonb) as e("subscription_id" bigint, "paused_until" timestamptz, "halve_cap" boolean, "succeeded" int,
         "answered" boolean, "timeouts" int, "reason" text, "cap" int, "window_ms" int)
     ), "throttled" as (
       update ${S}."subscription_pause" p set
         "paused_until" = coalesce(e."paused_until", p."paused_until"),
         "timeout_run" = case when ${RUN} >= ${TIMEOUT_RUN_HALVES_CAP} then 0 else ${RUN} end,
         "in_flight_cap" = case
           when ${HALVES} then greatest(1, coalesce(p."in_flight_cap", e."cap") / 2)
           when p."in_flight_cap" is not null and e."succeeded" > 0 and e."paused_until" is null and not ${WANTS_HALVING}
             then case when p."in_flight_cap" + e."succeeded" >= e."cap" then null else p."in_flight_cap" + e."succeeded" end
           else p."in_flight_cap" end,
         "cap_halved_at" = case when ${HALVES} then now() else p."cap_halved_at" end,
         "reason" = case when e."paused_until" is not null or ${HALVES} then coalesce(e."reason", p."reason") else p."reason" end,
         "updated_at" = now()
         from "effect" e
        where p."subscription_id" = e."subscription_id"
          and (e."paused_until" is not null or e."halve_cap" or e."timeouts" > 0 or (e."answered" and p."timeout_run" > 0)
            or (e."succeeded" > 0 and p."in_flight_cap" is not null))
     ), "updated" as (
       update ${S}."delivery" d set "status" = i."status", "next_attempt_at" = i."next_attempt_at", "claim_id" = null, "once" = false,
         "last_response_status" = i."response_status", "last_error" = i."error", "updated_at" = now()
         from "input" i where d."id" = i."delivery_id" and d."claim_id" = i."claim_id"
           -- The rows by their primary key: a join on the input alone (estimated at 100 rows) was planned as a scan of the whole table.
           and d."id" = any(array(select "delivery_id" from "input"))
       returning d."subscription_id", d."status"
     ), "attempt" as (
       insert into ${S}."delivery_attempt" ("id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type",
         "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "next_attempt_at")
       select "attempt_id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type",
         "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "next_attempt_at" from "input"
     )${handOn}`;
  const values = [
    rows,
    JSON.stringify(perSubscription),
    ...(o.handOn ? [o.cap ?? null, o.handOn.leaseSeconds, o.handOn.claimId] : []),
  ];
  // knex's raw skips the ORM's per-query work; a name in options() makes it a prepared statement in pg.
  const name = o.handOn ? "delivery-record-hand-on" : "delivery-record";
  return (
    await orm.em
      .getKnex()
      .raw<{ rows: Row[] }>(sql, values)
      .options(o.prepared === true ? { name } : {})
  ).rows;
}
