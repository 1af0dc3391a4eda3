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
// event's payload the state after the updates before it.
//
// What that order means on each bus:
// - NATS: a batch's rows are sent together, in order, on one connection,
//   and their acknowledgements awaited together (NatsBus.publishInOrder):
//   each row after the first is stored only if the stream's last stored
//   message is the row before it (Nats-Expected-Last-Msg-Id), so when one
//   row is not stored, none behind it in the batch is either. The first row
//   not acknowledged ends the batch; it and everything behind it are
//   published again later, in order (a row whose acknowledgement timed out
//   but that was stored after all is dropped then as a duplicate). So the
//   stream holds the events in commit order, failures included. (Another
//   publisher's message in between, or a duplicate, breaks the chain without
//   anything failing: the relay goes on at once from that row.) A consumer whose handler
//   fails gets that message again later; with max_ack_pending 1 before any
//   later one, otherwise after the ones behind it (at least once either way).
// - In process (embedded start, no stream): a publish runs the consumers'
//   handlers, and one consumer's failure must not hold back the others. A
//   publish that some consumers refused (ConsumersBehindError: their handler
//   failed, or they are held behind an earlier failed message of theirs; or
//   NoConsumerError: none registered yet) does not end the batch: the row
//   stays unsent and is DEFERRED, the relay goes on with the rows behind it,
//   and publishes the deferred rows again, oldest first, when the bus says
//   they may go (a consumer that already has an event skips it). The bus
//   holds each consumer's later events behind its failed one, so the
//   guarantee is per consumer: every consumer gets the events in commit
//   order, at least once; across consumers there is no common order (one
//   that failed is behind the others). Deferred rows are only remembered in
//   memory: after a restart or a lease hand-over the relay starts again from
//   the oldest unsent row, and the bus's duplicate window skips what each
//   consumer already has (after a restart of the process, handlers may see an
//   event again: at least once).
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
import { ConsumersBehindError } from "./event-bus/in-process-bus.js";
import { leaseTimingProblem } from "./config.js";
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

/** Orders two bigserial values given as decimal text. */
const compareSeq = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** The advisory lock that orders one schema's outbox inserts. */
const outboxLockKey = (schema: string) => `bizcard.outbox:${schema}`;

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
  /** Rows some consumers refused (in-process bus): kept unsent and published again later; absent when none. */
  deferred?: number;
}

/** A row the bus refused for some consumers only: published again once `retryAt` (Date.now() time) has passed. */
interface DeferredRow {
  seq: string;
  retryAt: number;
  failures: number;
}

/** The bus has the message for some consumers, or none yet: the rows behind it may still go. */
const isDeferrable = (err: unknown) => err instanceof ConsumersBehindError || err instanceof NoConsumerError;

/** The shortest wait before deferred rows are published again. */
const DEFERRED_FLOOR_MS = 50;

/** How long a row that found no consumer waits before it is published again (the bus gives no time for it). */
const noConsumerDelay = (failures: number) => Math.min(5000, 250 * 2 ** Math.min(failures - 1, 5));

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
  /**
   * The seq of the last row this relay tried, in order, while holding the
   * lease: new rows are read after it. Rows at or before it that are still
   * unsent are the deferred ones. "0" reads from the oldest unsent row.
   */
  private cursor = "0";
  /** Rows the bus refused for some consumers (ORDER, in process): id → when to try again. */
  private readonly deferred = new Map<string, DeferredRow>();
  /** The last batch read as many new rows as it could: more may be waiting. */
  private moreRows = false;

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
   * One batch, as the lease holder: publish again the deferred rows that are
   * due (oldest first), then read unsent rows after the cursor in commit
   * order, publish them (all at once on NATS, one by one in process), mark
   * what the bus acknowledged. Before each publish the lease must outlast it; if not, the rows sent so far are
   * marked and the lease renewed, and the batch ends if that fails. A failed
   * publish ends the batch (the rows before it are still marked), unless the
   * bus took it for some consumers only or found none (in process): that row
   * is deferred and the batch goes on (ORDER above).
   */
  async publishBatch(): Promise<RelayBatch> {
    try {
      return await this.runBatch();
    } catch (err) {
      // Rows may have been published and not marked (the database failed):
      // they are after the cursor's start again, not skipped.
      this.forget();
      throw err;
    }
  }

  private async runBatch(): Promise<RelayBatch> {
    const { schema, bus } = this.options;
    if (!(await this.lease())) {
      this.forget();
      return { leader: false, published: 0 };
    }
    const em = this.options.orm.em.fork();
    this.moreRows = false;
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
    type Row = { id: string; seq: string; subject: string; payload: Buffer };
    /** Publishes rows in order; false when the batch must end. */
    const publishRows = async (rows: Row[], advance: boolean): Promise<boolean> =>
      bus.publishInOrder ? publishTogether(rows, advance) : publishOneByOne(rows, advance);
    /**
     * NATS: all the rows at once, acknowledgements awaited together
     * (EventBus.publishInOrder: the stream stores them as a prefix, in order).
     * The first row not acknowledged ends the batch; what was stored after it
     * anyway (an acknowledgement that timed out) is dropped as a duplicate when
     * it is published again.
     */
    const publishTogether = async (rows: Row[], advance: boolean): Promise<boolean> => {
      let from = 0;
      while (from < rows.length) {
        // One lease check covers them all: they start together, each within the publish timeout.
        if (!this.leaseCoversPublish()) {
          await markSent();
          if (!(await this.lease()) || !this.leaseCoversPublish()) {
            leaseLost = true;
            return false;
          }
        }
        const window = rows.slice(from);
        const result = await bus.publishInOrder!(window.map((r) => ({ subject: r.subject, data: new Uint8Array(r.payload), msgId: r.id })));
        for (const row of window.slice(0, result.published)) {
          sent.push(row.id);
          this.deferred.delete(row.id);
          if (advance) this.cursor = row.seq;
        }
        from += result.published;
        if (from < rows.length && (result.error !== undefined || result.published === 0)) {
          error = result.error ?? new Error("outbox publish: nothing acknowledged");
          return false;
        }
      }
      return true;
    };
    const publishOneByOne = async (rows: Row[], advance: boolean): Promise<boolean> => {
      for (const row of rows) {
        if (!this.leaseCoversPublish()) {
          await markSent();
          if (!(await this.lease()) || !this.leaseCoversPublish()) {
            leaseLost = true;
            return false;
          }
        }
        try {
          await bus.publish(row.subject, new Uint8Array(row.payload), row.id);
          sent.push(row.id);
          this.deferred.delete(row.id);
        } catch (err) {
          if (!isDeferrable(err)) {
            error = err;
            return false;
          }
          const failures = (this.deferred.get(row.id)?.failures ?? 0) + 1;
          const retryAt = err instanceof ConsumersBehindError ? err.retryAt : Date.now() + noConsumerDelay(failures);
          this.deferred.set(row.id, { seq: row.seq, retryAt, failures });
          this.options.logger.debug({ err, id: row.id, retryAt: new Date(retryAt) }, "outbox row deferred: some consumers have not taken it");
        }
        if (advance) this.cursor = row.seq;
      }
      return true;
    };

    let going = true;
    // The deferred rows first, all of them in commit order as soon as one is
    // due: a consumer held behind an earlier row gets that row first, then these.
    if (this.deferred.size > 0 && this.nextRetryAt() <= Date.now()) {
      const ids = [...this.deferred.entries()].sort(([, a], [, b]) => compareSeq(a.seq, b.seq)).map(([id]) => id);
      for (let i = 0; going && i < ids.length; i += this.batchSize) {
        const chunk = ids.slice(i, i + this.batchSize);
        const rows: { id: string; seq: string; subject: string; payload: Buffer }[] = await em.execute(
          `select "id", "seq"::text as "seq", "subject", "payload" from "${schema}"."outbox"
            where "id" in (${chunk.map(() => "?").join(",")}) and "published_at" is null order by "outbox"."seq"`,
          chunk,
        );
        // Published meanwhile (by a relay before a lease hand-over) or cleaned up: nothing left to do.
        const unsent = new Set(rows.map((r) => r.id));
        for (const id of chunk) if (!unsent.has(id)) this.deferred.delete(id);
        going = await publishRows(rows, false);
      }
    }
    if (going) {
      const rows: { id: string; seq: string; subject: string; payload: Buffer }[] = await em.execute(
        `select "id", "seq"::text as "seq", "subject", "payload" from "${schema}"."outbox"
          where "published_at" is null and "seq" > ?::bigint order by "outbox"."seq" limit ?`,
        [this.cursor, this.batchSize],
      );
      this.moreRows = rows.length === this.batchSize;
      await publishRows(rows, true);
    }
    await markSent();
    if (leaseLost) this.forget();
    return {
      leader: true,
      published: sent.length,
      error,
      ...(leaseLost ? { leaseLost: true as const } : {}),
      ...(this.deferred.size > 0 ? { deferred: this.deferred.size } : {}),
    };
  }

  /** Another relay may publish meanwhile: start again from the oldest unsent row when the lease comes back. */
  private forget(): void {
    this.cursor = "0";
    this.deferred.clear();
  }

  /** When the earliest deferred row may be published again (Infinity: none). */
  private nextRetryAt(): number {
    let at = Infinity;
    for (const row of this.deferred.values()) at = Math.min(at, row.retryAt);
    return at;
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
          this.options.logger.warn({ err: batch.error, published: batch.published, retryInMs: delay }, "outbox publish failed");
        } else if (batch.leaseLost) {
          failures = 0;
          this.options.logger.warn({ published: batch.published }, "outbox lease not renewed in time; batch ended before the next publish");
        } else {
          failures = 0;
          if (this.moreRows || this.pendingWake) delay = 0;
        }
        // Deferred rows come back when the bus says they may go, even before the next poll; not
        // sooner than DEFERRED_FLOOR_MS (a row held behind another relay's row must not spin).
        if (!batch.error && this.deferred.size > 0) delay = Math.min(delay, Math.max(DEFERRED_FLOOR_MS, this.nextRetryAt() - Date.now()));
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
