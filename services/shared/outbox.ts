// Transactional outbox. A service writes the event row in the same
// transaction as the change it describes; the relay publishes unsent rows to
// the bus with Nats-Msg-Id = event id, then marks them sent. A crash anywhere
// in between leaves the row unsent (published again: the stream drops the
// duplicate) or sent after the broker acknowledged it: never lost.
//
// One relay publishes at a time, whatever the number of replicas: it holds a
// lease (a row in <schema>.outbox_lease, renewed every batch), so events leave
// in commit order. When the holder dies, another takes over once the lease
// expires. No transaction is held while publishing.
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

/** Call inside the transaction that makes the change. */
export async function enqueueEvent(em: EntityManager, schema: string, event: OutboxEvent): Promise<void> {
  await em.execute(`insert into "${schema}"."outbox" ("id", "subject", "payload") values (?, ?, ?)`, [
    event.id,
    event.subject,
    Buffer.from(event.payload),
  ]);
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
}

export interface RelayBatch {
  /** False when another relay holds the lease. */
  leader: boolean;
  published: number;
  error?: unknown;
}

export class OutboxRelay {
  private stopped = true;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private pendingWake = false;
  private lastCleanup = 0;
  private readonly batchSize: number;
  private readonly leaseMs: number;
  /** This relay's identity as a lease holder. */
  readonly id = randomUUID();

  constructor(private readonly options: OutboxRelayOptions) {
    this.batchSize = options.batchSize ?? 100;
    this.leaseMs = options.leaseMs ?? 15_000;
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
    await this.options.orm.em
      .fork()
      .execute(`update "${this.options.schema}"."outbox_lease" set "expires_at" = now() where "holder" = ?`, [this.id])
      .catch(() => undefined);
  }

  /** Takes or renews the lease; false while another relay holds it. */
  private async lease(): Promise<boolean> {
    const rows: unknown[] = await this.options.orm.em.fork().execute(
      `insert into "${this.options.schema}"."outbox_lease" ("name", "holder", "expires_at")
         values ('relay', ?, now() + make_interval(secs => ?))
       on conflict ("name") do update set "holder" = excluded."holder", "expires_at" = excluded."expires_at"
         where "outbox_lease"."holder" = excluded."holder" or "outbox_lease"."expires_at" < now()
       returning "holder"`,
      [this.id, this.leaseMs / 1000],
    );
    return rows.length === 1;
  }

  /**
   * One batch, as the lease holder: read unsent rows in commit order, publish
   * them one by one, mark what the broker acknowledged. A failed publish ends
   * the batch; the rows before it are still marked.
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
    let error: unknown;
    for (const row of rows) {
      try {
        await bus.publish(row.subject, new Uint8Array(row.payload), row.id);
        sent.push(row.id);
      } catch (err) {
        error = err;
        break;
      }
    }
    if (sent.length > 0) {
      await em.execute(
        `update "${schema}"."outbox" set "published_at" = now() where "id" in (${sent.map(() => "?").join(",")})`,
        sent,
      );
    }
    return { leader: true, published: sent.length, error };
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
