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
// stops, another takes over once the lease expires (at once after release()).
// No transaction is held while publishing. What the lease cannot rule out:
// a NATS publish that timed out while the connection was down can still reach
// the broker after a reconnect, and rows published but not yet marked when a
// relay dies go out again; JetStream's duplicate window drops both copies.
// On the in-process bus a publish runs the consumers' handlers; its time is
// theirs (the embedded start has one relay per schema, so no hand-over).
import { randomUUID } from "node:crypto";
import type { MikroORM } from "@mikro-orm/postgresql";
import { leaseTimingProblem } from "../config.js";

export interface OutboxLeaseOptions {
  orm: MikroORM;
  schema: string;
  /** How long the lease lasts without renewal. */
  leaseMs: number;
  /** The longest one publish may take: a publish starts only while the lease outlasts it. */
  publishTimeoutMs: number;
  /** The relay's poll interval: the lease must outlast several (leaseTimingProblem). */
  pollMs: number;
}

export class OutboxLease {
  /** This relay's identity as a lease holder. */
  readonly id = randomUUID();
  /** Until when (performance.now()) this relay surely holds the lease; 0 when it does not. */
  private until = 0;
  private readonly marginMs: number;

  constructor(private readonly options: OutboxLeaseOptions) {
    const problem = leaseTimingProblem(options);
    if (problem) throw new RangeError(`outbox lease (${options.leaseMs} ms) ${problem}`);
    this.marginMs = options.leaseMs / 5;
  }

  /**
   * Takes or renews the lease, fenced: only the holder renews, and another
   * relay takes it only once it has expired. False while another relay holds it.
   */
  async take(): Promise<boolean> {
    const { orm, schema, leaseMs } = this.options;
    // The database counts the lease from when it runs the statement, which is
    // no earlier than this: the local expiry is never later than the real one.
    const sentAt = performance.now();
    const rows: unknown[] = await orm.em.fork().execute(
      `insert into "${schema}"."outbox_lease" ("name", "holder", "expires_at")
         values ('relay', ?, now() + make_interval(secs => ?))
       on conflict ("name") do update set "holder" = excluded."holder", "expires_at" = excluded."expires_at"
         where "outbox_lease"."holder" = excluded."holder" or "outbox_lease"."expires_at" < now()
       returning "holder"`,
      [this.id, leaseMs / 1000],
    );
    this.until = rows.length === 1 ? sentAt + leaseMs : 0;
    return rows.length === 1;
  }

  /**
   * The lease for a batch: renewed (take) only once half of it has run, so
   * a relay that keeps up (a batch per commit) does not renew it on every
   * batch, one statement less each. The fencing is the same: another relay
   * takes it only once it has expired, and publishes still start only while
   * the local lease covers them (coversPublish).
   */
  async keep(): Promise<boolean> {
    if (this.until - performance.now() > this.options.leaseMs / 2) return true;
    return this.take();
  }

  /** The lease, as tracked here, outlasts one more publish with the margin to spare. */
  coversPublish(): boolean {
    return performance.now() + this.options.publishTimeoutMs + this.marginMs <= this.until;
  }

  /** Hands the lease back: another relay takes over at once. */
  async release(): Promise<void> {
    this.until = 0;
    await this.options.orm.em
      .fork()
      .execute(`update "${this.options.schema}"."outbox_lease" set "expires_at" = now() where "holder" = ?`, [this.id])
      .catch(() => undefined);
  }
}
