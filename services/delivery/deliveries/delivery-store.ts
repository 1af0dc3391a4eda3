// The delivery tables' statements, each one SQL statement (no unit of work):
// the fan-out's write, the workers' claim and record, and the manual retry.
import type { Knex, MikroORM } from "@mikro-orm/postgresql";
import { randomUUID } from "node:crypto";
import { recordAttempts, type AttemptRecord, type ClaimedDelivery } from "./attempt-record.js";
import { claimDue } from "./delivery-claim.js";
import type { Pair } from "../../shared/owner.js";
import { uuidV7Sql } from "./uuid-v7-sql.js";
import { orderedHeadJsonSql, parseHead } from "./ordered-head.js";

export type { AttemptRecord, ClaimedDelivery } from "./attempt-record.js";

const S = `"delivery"`;

/** The error of a delivery (and its log line) skipped because its subscription was disabled. */
const SKIPPED_ERROR = "skipped: the subscription was disabled";

export interface FanOutEvent {
  eventId: string;
  eventType: string;
  organisationId: string;
  body: string;
  /** The event's JetStream sequence; undefined on the in-process bus. */
  streamSequence: number | undefined;
  traceparent: string | undefined;
  tracestate?: string;
  /** skipped: the subscription is disabled (recorded, not sent); ordered: one at a time, in stream order. */
  subscribers: { subscriptionId: bigint; clientId: string; skipped?: boolean; ordered?: boolean }[];
}

interface FanOutBatch {
  /** The events of a batch, each once. */
  events: FanOutEvent[];
  /** The highest JetStream sequence of the batch (skipped messages included); undefined on the in-process bus. */
  streamSequence: number | undefined;
  consumer: string;
}

interface DeliveryStoreOptions {
  /** A halved in-flight cap is not halved again within this (DELIVERY_TIMEOUT_MS, by default 10 s). */
  halvingWindowMs?: number;
  /** The hot statements as named prepared statements (real PostgreSQL only). */
  prepared?: boolean;
}

/** A claimed row (the claim's and the hand-on's returned columns) as the worker holds it. */
function claimedOf(r: Record<string, unknown>, claimId: string): ClaimedDelivery {
  return {
    id: BigInt(r.id as string),
    eventId: r.event_id as string,
    subscriptionId: BigInt(r.subscription_id as string),
    organisationId: r.organisation_id as string,
    clientId: r.client_id as string,
    eventType: r.event_type as string,
    attempt: Number(r.attempts),
    once: Boolean(r.once),
    ordered: Boolean(r.ordered),
    body: (r.body as string) ?? "",
    claimId,
    traceparent: (r.traceparent as string | null) ?? undefined,
    tracestate: (r.tracestate as string | null) ?? undefined,
  };
}

export function createDeliveryStore(orm: MikroORM, options: DeliveryStoreOptions = {}) {
  const execute = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) =>
    orm.em.fork().execute<T[]>(sql, params);
  const knex = orm.em.getKnex();
  // knex's raw skips the ORM's per-query work; a name in options() makes it a prepared statement in pg.
  const hot = async <T>(name: string, sql: string, params: readonly Knex.RawBinding[]) =>
    (await knex.raw<{ rows: T[] }>(sql, params).options(options.prepared === true ? { name } : {})).rows;
  /**
   * Several attempts in one statement, with what their answers ask of their
   * subscriptions (attempt-record.ts). With `handOnLeaseSeconds`, returns the
   * rows the successes' slots were handed on to (hand-on.ts), claimed.
   */
  async function recordMany(list: AttemptRecord[], cap?: number, handOnLeaseSeconds?: number) {
    const claimId = randomUUID();
    const handOn = handOnLeaseSeconds === undefined ? undefined : { claimId, leaseSeconds: handOnLeaseSeconds };
    const { prepared, halvingWindowMs = 10_000 } = options;
    const rows = await recordAttempts(orm, list, { cap, halvingWindowMs, handOn, prepared });
    return rows.map((r) => claimedOf(r, claimId));
  }
  return {
    /**
     * A batch's fan-out in ONE statement: each event's body, a row per
     * subscriber, and the consumer's position. An event and its rows are
     * written together or not at all, so a redelivered event adds nothing. A
     * disabled subscription's row is "skipped", with its line in the log.
     * Returns the pending rows created, how many are ordered, their subscriptions.
     */
    async recordFanOut(f: FanOutBatch): Promise<{ created: number; ordered: number; subscriptions: bigint[] }> {
      const events = JSON.stringify(
        f.events.map((e) => ({
          event_id: e.eventId,
          event_type: e.eventType,
          organisation_id: e.organisationId,
          body: e.body,
          seq: e.streamSequence ?? null,
          traceparent: e.traceparent ?? null,
          tracestate: e.tracestate ?? null,
        })),
      );
      const subs = JSON.stringify(
        f.events.flatMap((e) =>
          e.subscribers.map((s) => ({
            event_id: e.eventId,
            id: s.subscriptionId.toString(),
            client_id: s.clientId,
            skipped: s.skipped === true,
            ordered: s.ordered === true,
          })),
        ),
      );
      const [row] = await hot<{ n: number; ordered: number; subscriptions: string[] | string }>(
        "delivery-fan-out",
        `with "event" as (
           insert into ${S}."delivery_event" ("event_id", "event_type", "organisation_id", "body", "stream_sequence", "traceparent", "tracestate", "created_at")
           select e."event_id", e."event_type", e."organisation_id", e."body", e."seq", e."traceparent", e."tracestate", now()
             from jsonb_to_recordset(?::jsonb) as e("event_id" uuid, "event_type" text, "organisation_id" uuid, "body" text, "seq" bigint, "traceparent" text, "tracestate" text)
           on conflict ("event_id") do nothing
           returning "event_id", "event_type", "organisation_id", "stream_sequence"
         ), "rows" as (
           insert into ${S}."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "next_attempt_at",
             "last_error", "ordered", "stream_sequence", "created_at", "updated_at")
           select e."event_id", s."id", e."organisation_id", s."client_id", e."event_type",
                  case when s."skipped" then 'skipped' else 'pending' end, case when s."skipped" then null else now() end,
                  case when s."skipped" then '${SKIPPED_ERROR}' else '' end, s."ordered", e."stream_sequence", now(), now()
             from "event" e
             join jsonb_to_recordset(?::jsonb) as s("event_id" uuid, "id" bigint, "client_id" text, "skipped" boolean, "ordered" boolean) on s."event_id" = e."event_id"
            -- In event order: on the in-process bus (no sequence) the row id is an ordered subscription's order.
            order by e."stream_sequence", e."event_id"
           on conflict ("event_id", "subscription_id") do nothing
           returning "id", "event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "ordered", "created_at"
         ), "skipped" as (
           insert into ${S}."delivery_attempt" ("id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type",
             "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "next_attempt_at")
           select ${uuidV7Sql()}, r."organisation_id", r."client_id", r."event_id", r."subscription_id", r."id", r."event_type",
                  0, 0, 'skipped', '${SKIPPED_ERROR}', 0, r."created_at", null
             from "rows" r where r."status" = 'skipped'
         ), "position" as (
           insert into ${S}."consumer_position" ("name", "stream_sequence", "updated_at")
           select ?, ?::bigint, now() where ?::bigint is not null
           on conflict ("name") do update set "stream_sequence" = greatest("consumer_position"."stream_sequence", excluded."stream_sequence"), "updated_at" = now()
         )
         select count(*)::int as "n", count(*) filter (where "ordered")::int as "ordered",
           coalesce(json_agg(distinct "subscription_id"::text), '[]') as "subscriptions" from "rows" where "status" = 'pending'`,
        [events, subs, f.consumer, f.streamSequence ?? null, f.streamSequence ?? null],
      );
      const ids = row?.subscriptions ?? [];
      const subscriptions = typeof ids === "string" ? (JSON.parse(ids) as string[]) : ids;
      return { created: row?.n ?? 0, ordered: row?.ordered ?? 0, subscriptions: subscriptions.map((id) => BigInt(id)) };
    },

    async position(consumer: string): Promise<number | undefined> {
      const [row] = await execute<{ s: string }>(
        `select "stream_sequence"::text as "s" from ${S}."consumer_position" where "name" = ?`,
        [consumer],
      );
      return row ? Number(row.s) : undefined;
    },

    /**
     * Claims up to `limit` due rows for this worker (delivery-claim.ts: the
     * per-subscription cap, the owners' turns, ordered heads).
     */
    async claim(limit: number, leaseSeconds: number, maxInFlightPerSubscription?: number, watermark?: number) {
      const { claimId, rows } = await claimDue(orm, { limit, leaseSeconds, maxInFlightPerSubscription, watermark });
      return rows.map((r) => claimedOf(r, claimId));
    },

    /** Hands a claim back without an attempt (the subscriptions could not be read): due again after `delaySeconds`. */
    async release(d: ClaimedDelivery, delaySeconds: number): Promise<void> {
      await execute(
        `update ${S}."delivery" set "attempts" = "attempts" - 1, "claim_id" = null, "next_attempt_at" = now() + make_interval(secs => ?), "updated_at" = now()
          where "id" = ? and "claim_id" = ?`,
        [delaySeconds, d.id.toString(), d.claimId],
      );
    },

    /**
     * The subscription is disabled or gone: the delivery is not sent. Its log
     * gets a line (attempt 0, outcome "cancelled", nothing sent), so an earlier
     * attempt's next_retry_at is not left standing as a retry still to come.
     */
    async cancel(d: ClaimedDelivery, why: string): Promise<void> {
      await execute(
        `with "cancelled" as (
           update ${S}."delivery" set "status" = 'cancelled', "attempts" = "attempts" - 1, "claim_id" = null, "next_attempt_at" = null,
             "last_error" = ?, "updated_at" = now() where "id" = ? and "claim_id" = ?
           returning "id", "event_id", "subscription_id", "organisation_id", "client_id", "event_type"
         )
         insert into ${S}."delivery_attempt" ("id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type",
           "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "next_attempt_at")
         select ${uuidV7Sql()}, c."organisation_id", c."client_id", c."event_id", c."subscription_id", c."id", c."event_type",
                0, 0, 'cancelled', ?, 0, now(), null
           from "cancelled" c`,
        [why, d.id.toString(), d.claimId, `cancelled: ${why}`],
      );
    },

    recordMany,

    /** One attempt alone: no cap, nothing handed on. */
    async record(a: AttemptRecord): Promise<void> {
      await recordMany([a]);
    },

    /**
     * A subscription was deleted or disabled: its waiting deliveries (not
     * those a worker holds) are cancelled; answers how many.
     */
    async cancelSubscription(subscriptionId: bigint, why = "the subscription was deleted"): Promise<number> {
      const rows = await execute(
        `update ${S}."delivery" set "status" = 'cancelled', "next_attempt_at" = null, "last_error" = ?, "updated_at" = now()
          where "subscription_id" = ? and "status" = 'pending' and ("claim_id" is null or "next_attempt_at" <= now())
          returning "id"`,
        [why, subscriptionId.toString()],
      );
      return rows.length;
    },

    /**
     * RetryDelivery: a finished one (succeeded, gave_up, skipped) gets one more
     * attempt (`once`); a pending one is due now, unless a worker holds it.
     * Returns the row as this statement left it (before a claim moves it a
     * lease ahead), the database's clock, the pause and (ordered) its head;
     * undefined when the owner has none.
     */
    async retryNow(owner: Pair, subscriptionId: bigint, id: bigint) {
      const [row] = await execute<Record<string, unknown>>(
        `with "target" as (
           select * from ${S}."delivery"
            where "id" = ? and "organisation_id" = ? and "client_id" = ? and "subscription_id" = ? for update
         ), "updated" as (
           update ${S}."delivery" d set "status" = 'pending', "once" = (t."status" <> 'pending'), "next_attempt_at" = now(), "claim_id" = null, "updated_at" = now()
             from "target" t
            where d."id" = t."id" and t."status" in ('pending', 'succeeded', 'gave_up', 'skipped')
              and (t."claim_id" is null or t."next_attempt_at" <= now())
           returning d.*
         ), "pause" as (
           select p."paused_until" from ${S}."subscription_pause" p
            where p."subscription_id" = ? and p."paused_until" > now() and exists (select 1 from "target")
         ), "head" as (
           select ${orderedHeadJsonSql(`t."subscription_id"`, `t."id"`)} as "head" from "target" t where t."ordered"
         )
         select *, now() as "now", (select "paused_until" from "pause") as "paused_until", (select "head" from "head") as "ordered_head" from "updated"
         union all
         select *, now() as "now", (select "paused_until" from "pause") as "paused_until", (select "head" from "head") as "ordered_head"
           from "target" where not exists (select 1 from "updated")`,
        [id.toString(), owner.organisationId, owner.clientId, subscriptionId.toString(), subscriptionId.toString()],
      );
      if (!row) return undefined;
      const { now, paused_until, ordered_head, ...delivery } = row;
      const date = (v: unknown) => new Date(v as string | Date);
      return {
        row: delivery,
        now: date(now),
        pausedUntil: paused_until ? date(paused_until) : null,
        orderedHead: parseHead(ordered_head),
      };
    },

    /** The subscription's pause while it runs (its target asked for one); null when none does. */
    async pausedUntil(subscriptionId: bigint): Promise<Date | null> {
      const [row] = await execute<{ paused_until: Date | string }>(
        `select "paused_until" from ${S}."subscription_pause" where "subscription_id" = ? and "paused_until" > now()`,
        [subscriptionId.toString()],
      );
      return row ? new Date(row.paused_until) : null;
    },
  };
}

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;
