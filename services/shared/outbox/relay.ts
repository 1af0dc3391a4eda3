// The publishing half of the transactional outbox: while it holds the lease
// (lease.ts), the relay reads the oldest unsent rows in seq order (never from
// a cursor: rows of different keys commit out of seq order), hands them to
// the bus and marks sent what the bus stored. A row the bus deferred
// (PublishDeferredError: the in-process bus) stays unsent while the rows
// behind it go, and is published again, oldest first, when the bus says it
// may; deferred rows live in memory only.
import type { MikroORM } from "@mikro-orm/postgresql";
import { publishAll, traceFields, type EventBus, type OutgoingMessage } from "../event-bus/event-bus.js";
import { backoffDelay, type Backoff } from "../loop/backoff.js";
import { PollLoop } from "../loop/poll-loop.js";
import type { Logger } from "../logger.js";
import { outboxOldestSources, outboxPendingSources } from "../metrics/metrics.js";
import { addSource } from "../metrics/scrape-sources.js";
import { startSpan, tracingState, type WorkSpan } from "../trace/tracing.js";
import { OutboxLease } from "./lease.js";
import { OutboxRows, type OutboxRow } from "./outbox-rows.js";

export interface OutboxRelayOptions {
  orm: MikroORM;
  schema: string;
  bus: EventBus;
  logger: Logger;
  pollMs: number;
  /** How long a relay's lease lasts without renewal. */
  leaseMs?: number;
  /** The bus's publish timeout: a publish starts only while the lease outlasts it. */
  publishTimeoutMs?: number;
  /** A round's statements as prepared statements (on its own connections: relay-database.ts). */
  preparedStatements?: boolean;
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

/** A row the bus deferred: published again once `retryAt` (Date.now() time) has passed. */
type DeferredRow = { seq: string; retryAt: number; failures: number };

const BATCH_SIZE = 100;
/** Sent rows are kept this long, then deleted. */
const RETENTION_HOURS = 168;
/** Failed batches and failed rounds. */
const FAILURE_BACKOFF: Backoff = { baseMs: 500, maxMs: 30_000 };
/** A row that found no consumer, when the bus gives no time for it. */
const NO_CONSUMER_BACKOFF: Backoff = { baseMs: 250, maxMs: 5000 };
/** The shortest wait before deferred rows are published again: a row held behind another relay's row must not spin. */
const DEFERRED_FLOOR_MS = 50;
const CLEANUP_EVERY_MS = 3_600_000;

/** Orders two bigserial values given as decimal text. */
const compareSeq = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** A batch that published only part of its rows: the loop backs off. */
class PublishFailed extends Error {
  constructor(
    override readonly cause: unknown,
    readonly published: number,
  ) {
    super("outbox publish failed");
  }
}

export class OutboxRelay {
  private readonly loop: PollLoop;
  private readonly lease: OutboxLease;
  private lastCleanup = 0;
  /** Rows the bus deferred: id → when to try again. */
  private readonly deferred = new Map<string, DeferredRow>();
  /** The last batch read as many new rows as it could: more may be waiting. */
  private moreRows = false;
  private readonly stopMetrics: (() => void)[] = [];
  private readonly rows: OutboxRows;

  constructor(private readonly options: OutboxRelayOptions) {
    this.rows = new OutboxRows(options.orm, options.schema, options.preparedStatements === true);
    this.lease = new OutboxLease({
      ...options,
      leaseMs: options.leaseMs ?? 15_000,
      publishTimeoutMs: options.publishTimeoutMs ?? 3000,
    });
    this.loop = new PollLoop({
      round: () => this.round(),
      backoff: FAILURE_BACKOFF,
      onError: (err, retryInMs) => {
        if (err instanceof PublishFailed)
          options.logger.warn({ err: err.cause, published: err.published, retryInMs }, err.message);
        else options.logger.error({ err, retryInMs }, "outbox relay failed");
      },
    });
  }

  start(): void {
    // outbox_pending_events and outbox_oldest_pending_age_seconds, read when scraped.
    this.stopMetrics.push(
      addSource(outboxPendingSources, async () => [[this.options.schema, (await this.rows.pending()).n]]),
      addSource(outboxOldestSources, async () => [[this.options.schema, (await this.rows.pending()).age]]),
    );
    this.loop.start();
  }

  /** Publish soon: a change was just committed (a failure back-off is waited out). */
  wake(): void {
    this.loop.wake();
  }

  /** Finishes the batch in hand, then hands the lease back so that another relay takes over at once. */
  async stop(): Promise<void> {
    for (const stop of this.stopMetrics.splice(0)) stop();
    await this.loop.stop();
    await this.lease.release();
  }

  /** One batch, as the lease holder: the deferred rows that are due, then the oldest other unsent rows. */
  async publishBatch(): Promise<RelayBatch> {
    try {
      return await this.runBatch();
    } catch (err) {
      // Rows published and not marked are read again (the bus drops the duplicates).
      this.deferred.clear();
      throw err;
    }
  }

  /** Unsent rows, for readiness and tests. */
  async backlog(): Promise<number> {
    return (await this.rows.pending()).n;
  }

  private async round(): Promise<number> {
    const batch = await this.publishBatch();
    await this.cleanup();
    if (batch.error) throw new PublishFailed(batch.error, batch.published);
    if (batch.leaseLost)
      this.options.logger.warn(
        { published: batch.published },
        "outbox lease not renewed in time; batch ended before the next publish",
      );
    let delay = this.moreRows ? 0 : this.options.pollMs;
    // Deferred rows come back when the bus says they may go, even before the next poll.
    if (this.deferred.size > 0) delay = Math.min(delay, Math.max(DEFERRED_FLOOR_MS, this.nextRetryAt() - Date.now()));
    return delay;
  }

  private async runBatch(): Promise<RelayBatch> {
    if (!(await this.lease.keep())) {
      // Another relay may publish meanwhile: deferred rows are read afresh when the lease comes back.
      this.deferred.clear();
      return { leader: false, published: 0 };
    }
    this.moreRows = false;
    const sent: string[] = [];
    let marked = 0;
    const markSent = async () => {
      const ids = sent.slice(marked);
      if (ids.length === 0) return;
      await this.rows.markSent(ids);
      marked = sent.length;
    };
    let error: unknown;
    let leaseLost = false;
    /** Publishes rows in order; false when the batch must end. */
    const publishRows = async (rows: OutboxRow[]): Promise<boolean> => {
      const seqOf = new Map(rows.map((r) => [r.id, r.seq]));
      // Exporting spans: each publish is a span of its event's trace, and the message carries it.
      const spans = new Map<string, WorkSpan>();
      const messages = rows.map((row) => {
        const message = toMessage(row);
        if (tracingState() !== "on") return message;
        const span = startSpan(`publish ${row.subject}`, row.traceparent, "producer", {
          "messaging.system": "nats",
          "messaging.destination.name": row.subject,
          "messaging.message.id": row.id,
        });
        spans.set(row.id, span);
        return { ...message, traceparent: span.traceparent };
      });
      const endSpan = (id: string, error?: unknown) => {
        spans.get(id)?.end(error);
        spans.delete(id);
      };
      const result = await publishAll(this.options.bus, messages, {
        beforeSend: async () => {
          if (this.lease.coversPublish()) return true;
          await markSent();
          if ((await this.lease.take()) && this.lease.coversPublish()) return true;
          leaseLost = true;
          return false;
        },
        published: (id) => {
          endSpan(id);
          sent.push(id);
          this.deferred.delete(id);
        },
        deferred: (id, retryAt, reason) => {
          endSpan(id, reason);
          const failures = (this.deferred.get(id)?.failures ?? 0) + 1;
          const at = retryAt ?? Date.now() + backoffDelay(failures, NO_CONSUMER_BACKOFF);
          this.deferred.set(id, { seq: seqOf.get(id)!, retryAt: at, failures });
          this.options.logger.debug(
            { err: reason, id, retryAt: new Date(at) },
            "outbox row deferred: some consumers have not taken it",
          );
        },
      });
      for (const id of [...spans.keys()]) endSpan(id, result.error ?? "not sent: the batch ended before it");
      if (result.error !== undefined) error = result.error;
      return result.error === undefined && !leaseLost;
    };

    let going = true;
    // All deferred rows first, in commit order, as soon as one is due: a consumer held back gets them in order.
    if (this.deferred.size > 0 && this.nextRetryAt() <= Date.now()) {
      const ids = [...this.deferred.entries()].sort(([, a], [, b]) => compareSeq(a.seq, b.seq)).map(([id]) => id);
      for (let i = 0; going && i < ids.length; i += BATCH_SIZE) {
        const chunk = ids.slice(i, i + BATCH_SIZE);
        const rows = await this.rows.readStillUnsent(chunk);
        // Published meanwhile (before a lease hand-over) or cleaned up: nothing left to do.
        const unsent = new Set(rows.map((r) => r.id));
        for (const id of chunk) if (!unsent.has(id)) this.deferred.delete(id);
        going = await publishRows(rows);
      }
    }
    if (going) {
      const rows = await this.rows.readUnsent([...this.deferred.keys()], BATCH_SIZE);
      this.moreRows = rows.length === BATCH_SIZE;
      await publishRows(rows);
    }
    await markSent();
    if (leaseLost) this.deferred.clear();
    return {
      leader: true,
      published: sent.length,
      error,
      ...(leaseLost ? { leaseLost: true as const } : {}),
      ...(this.deferred.size > 0 ? { deferred: this.deferred.size } : {}),
    };
  }

  /** When the earliest deferred row may be published again (Infinity: none). */
  private nextRetryAt(): number {
    return [...this.deferred.values()].reduce((at, row) => Math.min(at, row.retryAt), Infinity);
  }

  private async cleanup(): Promise<void> {
    if (Date.now() - this.lastCleanup < CLEANUP_EVERY_MS) return;
    this.lastCleanup = Date.now();
    await this.rows.deleteSent(RETENTION_HOURS);
  }
}

const toMessage = (row: OutboxRow): OutgoingMessage => ({
  subject: row.subject,
  data: new Uint8Array(row.payload),
  msgId: row.id,
  ...traceFields({ traceparent: row.traceparent ?? undefined, tracestate: row.tracestate ?? undefined }),
});
