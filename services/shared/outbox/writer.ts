// The writing half of the transactional outbox: a service writes the event
// row (<schema>.outbox, made by its migration) in the same transaction as the
// change it describes; the relay (relay.ts) publishes it with Nats-Msg-Id =
// event id, then marks it sent. A crash in between publishes it again (the
// bus drops the duplicate): never lost.
//
// ORDER. Events with the same order key (their organisation) leave in commit
// order. seq (a bigserial taken at INSERT) alone is not commit order, so
// enqueueEvent first takes a transaction-scoped advisory lock on the key:
// among one key's transactions seq is then handed out in commit order, and
// the relay publishes in seq order. The price: one key's event-writing
// transactions run one at a time from their event to their commit, so
// enqueueEvent must be the transaction's last statement.
import type { EntityManager } from "@mikro-orm/postgresql";
import { escapeLiteral } from "pg";
import { currentRequest } from "../request-context.js";

export interface OutboxEvent {
  id: string;
  subject: string;
  payload: Uint8Array;
  /** Events with the same key leave in commit order (see ORDER): the organisation the event belongs to. */
  orderKey: string;
}

/** The advisory lock that orders one key's outbox inserts in a schema. */
const outboxLockKey = (schema: string, orderKey: string) => `bizcard.outbox:${schema}:${orderKey}`;

/** Call in the change's transaction, as its last statement (see ORDER); the event keeps the request's trace context. */
export async function enqueueEvent(em: EntityManager, schema: string, event: OutboxEvent): Promise<void> {
  await em.execute(outboxInsertSql(schema), outboxInsertParams(schema, event));
}

/**
 * The insert of one event (parameters: outboxInsertParams). The lock comes
 * first: seq (nextval) is computed for the row the volatile subquery yields,
 * once the lock is granted; PostgreSQL releases it at commit or rollback.
 */
function outboxInsertSql(schema: string): string {
  return `insert into "${schema}"."outbox" ("id", "subject", "payload", "traceparent", "tracestate")
     select ?::uuid, ?::text, ?::bytea, ?::text, ?::text from (select pg_advisory_xact_lock(hashtextextended(?, 0))) as "turn"`;
}

/**
 * The insert of several events, in the statement that writes their changes
 * (locks never held across a round trip). `source`: a FROM item with
 * outboxRowOf's columns. Every key's lock is taken, in key order (no
 * deadlock), before any row takes its seq: the join needs "turns" first.
 */
export function outboxInsertManySql(schema: string, source: string): string {
  const prefix = escapeLiteral(outboxLockKey(schema, ""));
  return `insert into "${schema}"."outbox" ("id", "subject", "payload", "traceparent", "tracestate")
     select e."id", e."subject", e."payload", e."traceparent", e."tracestate" from ${source} as e,
       (select count(pg_advisory_xact_lock(hashtextextended(${prefix} || k."order_key", 0))) as "n"
          from (select distinct x."order_key" from ${source} as x order by 1) as k) as "turns"`;
}

/** An event as the JSON columns outboxInsertManySql reads (the payload in base64). */
export function outboxRowOf(event: OutboxEvent): Record<string, string | null> {
  return {
    event_id: event.id,
    subject: event.subject,
    payload: Buffer.from(event.payload).toString("base64"),
    ...traceColumns(),
    order_key: event.orderKey,
  };
}

function outboxInsertParams(schema: string, event: OutboxEvent): unknown[] {
  const { traceparent, tracestate } = traceColumns();
  return [
    event.id,
    event.subject,
    Buffer.from(event.payload),
    traceparent,
    tracestate,
    outboxLockKey(schema, event.orderKey),
  ];
}

/** The trace headers of the request being served (one read of its context), as column values. */
function traceColumns(): { traceparent: string | null; tracestate: string | null } {
  const request = currentRequest();
  return { traceparent: request?.traceparent ?? null, tracestate: request?.tracestate ?? null };
}
