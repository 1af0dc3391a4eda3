// The writing half of the transactional outbox. A service writes the event
// row in the same transaction as the change it describes; the relay
// (relay.ts) publishes unsent rows to the bus with Nats-Msg-Id = event id,
// then marks them sent. A crash anywhere in between leaves the row unsent
// (published again: the bus drops the duplicate) or sent after the broker
// acknowledged it: never lost.
//
// ORDER. Events leave in the order their transactions committed, for the
// whole schema (not only per contact). seq is a bigserial taken at INSERT, so
// on its own it is not commit order: a transaction could take seq 6, another
// seq 7 and commit first, and a reader would publish 7 and later 6. So
// enqueueEvent first takes a transaction-scoped advisory lock on the schema's
// outbox and holds it until commit or rollback: among transactions that write
// events, seq is handed out in commit order, and once the relay sees seq n
// every committed row below n is visible too, so it never goes back to a
// lower seq (a rolled-back insert only leaves a gap). The price: in one
// schema, event-writing transactions run one at a time from their first
// event to their commit, so enqueueEvent must be the last statement of the
// transaction. Per contact, the row lock in updateContact also makes each
// event's payload the state after the updates before it.
//
// Every service that publishes has its own tables, created by its migration:
//   <schema>.outbox (seq bigserial, id uuid primary key, subject text,
//     payload bytea, created_at timestamptz, published_at timestamptz null,
//     traceparent text null)
//   <schema>.outbox_lease (name text primary key, holder text, expires_at timestamptz)
import type { EntityManager } from "@mikro-orm/postgresql";
import { currentTraceparent } from "../request-context.js";

export interface OutboxEvent {
  id: string;
  subject: string;
  payload: Uint8Array;
}

/** The advisory lock that orders one schema's outbox inserts. */
const outboxLockKey = (schema: string) => `bizcard.outbox:${schema}`;

/**
 * The event keeps the traceparent of the request that made the change (the
 * relay sends it with the event, consumers continue that trace).
 *
 * Call inside the transaction that makes the change, as its last statement:
 * from here to its commit, other event-writing transactions of the schema
 * wait (that is what makes seq follow commit order, see ORDER above).
 */
export async function enqueueEvent(em: EntityManager, schema: string, event: OutboxEvent): Promise<void> {
  await em.execute(outboxInsertSql(schema), outboxInsertParams(schema, event));
}

/**
 * The outbox insert as SQL, for a statement that writes the change and its
 * event at once (a data-modifying CTE; then the lock is held only from this
 * insert to the statement's own commit). `requires`: a FROM item the row
 * needs (the CTE that wrote the change: no change, no event). Its parameters:
 * outboxInsertParams.
 *
 * Transaction-scoped: released at commit or rollback by PostgreSQL itself, so
 * it does not matter which pooled connection runs the transaction. The lock
 * and the insert are one statement: the lock is held from here to the
 * commit, and a round trip to this process in between (waiting for an event
 * loop that is busy elsewhere) would make every event-writing transaction of
 * the schema wait that much longer. The lock is taken first: the row's seq
 * (nextval, the column default) is computed for each row the subquery
 * yields, and the subquery (volatile, so neither pulled up nor dropped)
 * yields it once the lock is granted.
 */
export function outboxInsertSql(schema: string, requires?: string): string {
  return `insert into "${schema}"."outbox" ("id", "subject", "payload", "traceparent")
     select ?::uuid, ?::text, ?::bytea, ?::text from (select pg_advisory_xact_lock(hashtextextended(?, 0))) as "turn"${requires ? `, ${requires}` : ""}`;
}

export function outboxInsertParams(schema: string, event: OutboxEvent): unknown[] {
  return [event.id, event.subject, Buffer.from(event.payload), currentTraceparent() ?? null, outboxLockKey(schema)];
}
