// The writing half of the transactional outbox. A service writes the event
// row in the same transaction as the change it describes; the relay
// (relay.ts) publishes unsent rows to the bus with Nats-Msg-Id = event id,
// then marks them sent. A crash anywhere in between leaves the row unsent
// (published again: the bus drops the duplicate) or sent after the broker
// acknowledged it: never lost.
//
// ORDER. Events with the same order key (the organisation they belong to)
// leave in the order their transactions committed. seq is a bigserial taken
// at INSERT, so on its own it is not commit order: a transaction could take
// seq 6, another seq 7 and commit first. So enqueueEvent first takes a
// transaction-scoped advisory lock on the key and holds it until commit or
// rollback: among transactions writing events of one key, seq is handed out
// in commit order, and whenever a row of the key is visible, every committed
// row of the key below it is visible too. The relay publishes the unsent rows
// it sees in seq order (relay.ts), so each key's events leave in commit
// order; two keys' events may leave in either order, as their transactions
// ran side by side. That is what ordered delivery needs (a subscription has
// one organisation's events), and events of different organisations do not
// wait for each other's commits. The price: for one key, event-writing
// transactions run one at a time from their event to their commit, so
// enqueueEvent must be the last statement of the transaction. Per contact,
// the row lock in updateContact also makes each event's payload the state
// after the updates before it.
//
// Every service that publishes has its own tables, created by its migration:
//   <schema>.outbox (seq bigserial, id uuid primary key, subject text,
//     payload bytea, created_at timestamptz, published_at timestamptz null,
//     traceparent text null, tracestate text null)
//   <schema>.outbox_lease (name text primary key, holder text, expires_at timestamptz)
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

/**
 * The event keeps the traceparent and tracestate of the request that made
 * the change (the relay sends them with the event, consumers continue that
 * trace).
 *
 * Call inside the transaction that makes the change, as its last statement:
 * from here to its commit, other event-writing transactions of the same
 * order key wait (that is what makes seq follow commit order, see ORDER above).
 */
export async function enqueueEvent(em: EntityManager, schema: string, event: OutboxEvent): Promise<void> {
  await em.execute(outboxInsertSql(schema), outboxInsertParams(schema, event));
}

/**
 * The outbox insert of one event, its parameters: outboxInsertParams.
 *
 * Transaction-scoped: released at commit or rollback by PostgreSQL itself, so
 * it does not matter which pooled connection runs the transaction. The lock
 * is taken first: the row's seq (nextval, the column default) is computed for
 * the row the subquery yields, and the subquery (volatile, so neither pulled
 * up nor dropped) yields it once the lock is granted.
 */
function outboxInsertSql(schema: string): string {
  return `insert into "${schema}"."outbox" ("id", "subject", "payload", "traceparent", "tracestate")
     select ?::uuid, ?::text, ?::bytea, ?::text, ?::text from (select pg_advisory_xact_lock(hashtextextended(?, 0))) as "turn"`;
}

/**
 * The outbox insert of several events at once, for a statement that writes
 * their changes too (a data-modifying CTE: then the locks are held only from
 * this insert to the statement's own commit, never across a round trip to
 * this process, whose busy event loop would make every event-writing
 * transaction of those keys wait that much longer). `source`: a FROM item with the
 * columns "id" (uuid), "subject", "payload" (bytea), "traceparent",
 * "tracestate" and "order_key" (text; outboxRowOf gives them as JSON). The lock of every key
 * is taken, in key order (two such statements never wait for each other in
 * a circle), before any row takes its seq: each row's seq is computed as the
 * join yields it, and the join needs the one row of "turns", an aggregate
 * over every lock, first. Rows of one key in one statement commit together:
 * among them there is no earlier one.
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
