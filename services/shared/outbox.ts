// Transactional outbox. A service writes the event row in the same
// transaction as the change it describes; the relay publishes unsent rows to
// the bus with Nats-Msg-Id = event id, then marks them sent. A crash anywhere
// in between leaves the row unsent (published again: the stream drops the
// duplicate) or sent after the broker acknowledged it: never lost.
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
// event's payload the state after the updates before it. Once published, the
// stream keeps that order; a consumer whose handler fails gets that message
// again later, after the ones behind it (at-least-once delivery).
//
// ONE RELAY AT A TIME, whatever the number of replicas: a relay publishes
// only while it holds the lease (a row in <schema>.outbox_lease that expires
// OUTBOX_LEASE_MS after its last renewal). The lease is taken and renewed by
// one fenced statement (`… where holder = me or expired … returning`), at the
// start of each batch and again during the batch. The relay also keeps the
// expiry locally, counted from when it SENT the statement that took or
// renewed the lease (so no later than the database's expiry), and starts a
// publish only while that local lease outlasts the publish's timeout
// (OUTBOX_PUBLISH_TIMEOUT_MS) plus a safety margin of a fifth of the lease.
// Otherwise it first marks what it has sent, then renews; if the renewal
// fails, or comes back too late to cover one more publish, the batch ends
// before the next publish. A renewal that hangs therefore only stops the
// relay: it never publishes on an expired lease. When the holder dies or
// stops, another takes over once the lease expires (at once after stop()).
// No transaction is held while publishing. What the lease cannot rule out:
// a NATS publish that timed out while the connection was down can still reach
// the broker after a reconnect, and rows published but not yet marked when a
// relay dies go out again; JetStream's duplicate window drops both copies.
// On the in-process bus a publish runs the consumers' handlers; its time is
// theirs (the embedded start has one relay per schema, so no hand-over).
//
// Every service that publishes has its own tables, created by its migration:
//   <schema>.outbox (seq bigserial, id uuid primary key, subject text,
//     payload bytea, created_at timestamptz, published_at timestamptz null)
//   <schema>.outbox_lease (name text primary key, holder text, expires_at timestamptz)
import { randomUUID } from "node:crypto";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";
import { NoConsumerError, type EventBus } from "./event-bus/event-bus.js";
import type { Logger } from "./logger.js";

export interface OutboxEvent {
  id: string;
  subject: string;
  payload: Uint8Array;
}

/**
 * Call inside the transaction that makes the change, as its last statement:
 * from here to its commit, other event-writing transactions of the schema
 * wait (that is what makes seq follow commit order, see ORDER above).
 */
export async function enqueueEvent(em: EntityManager, schema: string, event: OutboxEvent): Promise<void> {
  // Transaction-scoped: released at commit or rollback by PostgreSQL itself, so
  // it does not matter which pooled connection runs the transaction.
  await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [outboxLockKey(schema)]);
  await em.execute(`insert into "${schema}"."outbox" ("id", "subject", "payload") values (?, ?, ?)`, [
    event.id,
    event.subject,
    Buffer.from(event.payload),
  ]);
}

/** The advisory lock that orders one schema's outbox inserts. */
const outboxLockKey = (schema: string) => `bizcard.outbox:${schema}`;

/**
 * A lease must cover several publishes and several polls: a relay renews it
 * once per poll while idle, and starts a publish only while the lease
 * outlasts the publish timeout plus a fifth of the lease (the margin).
 */
export const LEASE_MULTIPLE = 3;

/** Why these timings cannot work together, or undefined when they can. */
export function leaseTimingProblem(t: { leaseMs: number; pollMs: number; publishTimeoutMs: number }): string | undefined {
  const needed = LEASE_MULTIPLE * Math.max(t.pollMs, t.publishTimeoutMs);
  if (t.leaseMs < needed) {
    return `must be at least ${LEASE_MULTIPLE} × the larger of the poll interval (${t.pollMs} ms) and the publish timeout (${t.publishTimeoutMs} ms): ${needed} ms or more`;
  }
  return undefined;
}

export interface OutboxRelayOptions {
  orm: MikroORM;
  schema: string;
  bus: EventBus;
  logger: Logger;
  pollMs: number;
  batchSize?: number;
  /** Sent rows are kept this long, then deleted. */
  retentionHours?: number;
  /** How long a relay's lease lasts without renewal. */
  leaseMs?: number;
  /** The longest one publish may take (the bus's publish timeout): a publish starts only while the lease outlasts it. */
  publishTimeoutMs?: number;
}

export interface RelayBatch {
  /** False when another relay holds the lease. */
  leader: boolean;
  published: number;
  error?: unknown;
  /** The lease could not be renewed in time during the batch: it ended before the next publish. */
  leaseLost?: true;
}

export class OutboxRelay {
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private pendingWake = false;
  private lastCleanup = 0;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  private readonly publishTimeoutMs: number;
  private readonly marginMs: number;
  /** Until when (performance.now()) this relay surely holds the lease; 0 when it does not. */
  private leaseUntil = 0;
  /** This relay's identity as a lease holder. */
  readonly id = randomUUID();

  constructor(private readonly options: OutboxRelayOptions) {
    this.batchSize = options.batchSize ?? 100;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 3000;
    this.marginMs = this.leaseMs / 5;
    const problem = leaseTimingProblem({ leaseMs: this.leaseMs, pollMs: options.pollMs, publishTimeoutMs: this.publishTimeoutMs });
    if (problem) throw new RangeError(`outbox lease (${this.leaseMs} ms) ${problem}`);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Publish soon: a change was just committed. */
  wake(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /** Finishes the batch in hand, then hands the lease back so that another relay takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.loop;
    this.leaseUntil = 0;
    await this.options.orm.em
      .fork()
      .execute(`update "${this.options.schema}"."outbox_lease" set "expires_at" = now() where "holder" = ?`, [this.id])
      .catch(() => undefined);
  }

  /**
   * Takes or renews the lease, fenced: only the holder renews, and another
   * relay takes it only once it has expired. False while another relay holds it.
   */
  private async lease(): Promise<boolean> {
    // The database counts the lease from when it runs the statement, which is
    // no earlier than this: the local expiry is never later than the real one.
    const sentAt = performance.now();
    const rows: unknown[] = await this.options.orm.em.fork().execute(
      `insert into "${this.options.schema}"."outbox_lease" ("name", "holder", "expires_at")
         values ('relay', ?, now() + make_interval(secs => ?))
       on conflict ("name") do update set "holder" = excluded."holder", "expires_at" = excluded."expires_at"
         where "outbox_lease"."holder" = excluded."holder" or "outbox_lease"."expires_at" < now()
       returning "holder"`,
      [this.id, this.leaseMs / 1000],
    );
    this.leaseUntil = rows.length === 1 ? sentAt + this.leaseMs : 0;
    return rows.length === 1;
  }

  /** The lease, as tracked here, outlasts one more publish with the margin to spare. */
  private leaseCoversPublish(): boolean {
    return performance.now() + this.publishTimeoutMs + this.marginMs <= this.leaseUntil;
  }

  /**
   * One batch, as the lease holder: read unsent rows in commit order, publish
   * them one by one, mark what the broker acknowledged. Before each publish the
   * lease must outlast it; if not, the rows sent so far are marked and the
   * lease renewed, and the batch ends if that fails. A failed publish ends the
   * batch; the rows before it are still marked.
   */
  async publishBatch(): Promise<RelayBatch> {
    const { schema, bus } = this.options;
    if (!(await this.lease())) return { leader: false, published: 0 };
    const em = this.options.orm.em.fork();
    const rows: { id: string; subject: string; payload: Buffer }[] = await em.execute(
      `select "id", "subject", "payload" from "${schema}"."outbox" where "published_at" is null order by "seq" limit ?`,
      [this.batchSize],
    );
    const sent: string[] = [];
    let marked = 0;
    const markSent = async () => {
      const ids = sent.slice(marked);
      if (ids.length === 0) return;
      await em.execute(`update "${schema}"."outbox" set "published_at" = now() where "id" in (${ids.map(() => "?").join(",")})`, ids);
      marked = sent.length;
    };
    let error: unknown;
    let leaseLost = false;
    for (const row of rows) {
      if (!this.leaseCoversPublish()) {
        await markSent();
        if (!(await this.lease()) || !this.leaseCoversPublish()) {
          leaseLost = true;
          break;
        }
      }
      try {
        await bus.publish(row.subject, new Uint8Array(row.payload), row.id);
        sent.push(row.id);
      } catch (err) {
        error = err;
        break;
      }
    }
    await markSent();
    return { leader: true, published: sent.length, error, ...(leaseLost ? { leaseLost: true as const } : {}) };
  }

  /** Unsent rows, for readiness and tests. */
  async backlog(): Promise<number> {
    const [row] = await this.options.orm.em
      .fork()
      .execute(`select count(*)::int as n from "${this.options.schema}"."outbox" where "published_at" is null`);
    return row.n;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let delay = this.options.pollMs;
      try {
        this.pendingWake = false;
        const batch = await this.publishBatch();
        if (batch.error) {
          failures++;
          delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
          // No consumer yet (in-process bus): the rows wait in the outbox, as they would in a stream.
          const level = batch.error instanceof NoConsumerError ? "debug" : "warn";
          this.options.logger[level]({ err: batch.error, published: batch.published, retryInMs: delay }, "outbox publish failed");
        } else if (batch.leaseLost) {
          failures = 0;
          this.options.logger.warn({ published: batch.published }, "outbox lease not renewed in time; batch ended before the next publish");
        } else {
          failures = 0;
          if (batch.published === this.batchSize || this.pendingWake) delay = 0;
        }
        await this.cleanup();
      } catch (err) {
        failures++;
        delay = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
        this.options.logger.error({ err, retryInMs: delay }, "outbox relay failed");
      }
      if (delay > 0 && !this.stopped) await this.sleep(delay, failures > 0);
    }
  }

  private async cleanup(): Promise<void> {
    if (Date.now() - this.lastCleanup < 3_600_000) return;
    this.lastCleanup = Date.now();
    const hours = this.options.retentionHours ?? 168;
    await this.options.orm.em
      .fork()
      .execute(`delete from "${this.options.schema}"."outbox" where "published_at" < now() - make_interval(hours => ?)`, [hours]);
  }

  /** Sleeps until the delay passes or wake() is called (a wake does not cut a failure back-off short). */
  private sleep(ms: number, backingOff: boolean): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = () => {
        if (!backingOff || this.stopped) {
          this.wakeUp = undefined;
          done();
        }
      };
    });
  }
}
