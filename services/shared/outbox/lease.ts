// ONE RELAY AT A TIME: a relay publishes only while it holds the lease (a row
// in <schema>.outbox_lease), taken and renewed by one fenced statement. It
// counts the expiry from when it SENT that statement, and starts a publish
// only while the lease outlasts the publish timeout plus a margin, so it never
// publishes on an expired lease. What goes out twice anyway (a timed-out
// publish that arrived, rows not yet marked) the duplicate window drops.
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

  /** Takes or renews the lease, fenced: another relay takes it only once expired. False while another holds it. */
  async take(): Promise<boolean> {
    const { orm, schema, leaseMs } = this.options;
    // The database counts from when it runs the statement, no earlier than this.
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

  /** The lease for a batch: renewed (take) only once half of it has run, not on every batch. */
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
