// The workers: claim due deliveries from PostgreSQL (FOR UPDATE SKIP LOCKED,
// so several processes share the work without sending a delivery twice),
// look up each subscription as it is NOW (deleted: not sent, nor the rest of
// its queue; disabled: not sent; the current
// target_url and secret), POST (delivery-attempt.ts), and record the attempt with the delivery's
// next state. Up to `concurrency` POSTs are in flight; a slot that frees up
// is refilled at once while there may be more due rows (the last claim got
// all it asked for); otherwise the worker waits for a wake-up (the fan-out in
// this process, a manual retry) or its poll. Attempts that finish while
// others are being recorded are recorded together, in one statement.
//
// CONTRACT: "2xx is success; 410 Gone deletes the subscription (REST Hooks);
// anything else, a timeout (10 s) or a refused connection is retried on a
// schedule of growing intervals over about a day, configurable."
import type { Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeOf } from "../../shared/event-types.js";
import type { Backoff } from "../../shared/loop/backoff.js";
import { PollLoop } from "../../shared/loop/poll-loop.js";
import type { AttemptRecord, ClaimedDelivery } from "../deliveries/delivery-store.js";
import { DeliveryAttempts, type AttemptOptions } from "./delivery-attempt.js";
import { FanOutWatermark } from "./fan-out-watermark.js";
import type { SubscriberCache } from "./subscriber-cache.js";

export interface DeliveryWorkerOptions extends AttemptOptions {
  /** Subscribers read for earlier batches, dropped when they change (subscriber-cache.ts); undefined: read for every batch. */
  subscriberCache?: SubscriberCache;
  concurrency: number;
  /** POSTs in flight to one subscription, across every delivery process (WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION); undefined: no cap. */
  maxInFlightPerSubscription?: number;
  pollMs: number;
  leaseSeconds: number;
  /**
   * The fan-out's watermark (EventBus.ackFloor of the fan-out consumer): an
   * ordered delivery of a later event is not claimed (delivery-claim.ts).
   * Undefined: no watermark (the in-process bus). Undefined from the call:
   * the consumer does not exist (yet), nothing counts as recorded.
   */
  fanOutFloor?: () => Promise<number | undefined>;
}

const subscribersById = (subscribers: Subscriber[]) => new Map(subscribers.map((s) => [s.subscriptionId, s]));

/**
 * Record statements a worker runs at once: one. The attempts that finish
 * while it runs make the next batch, so the busier the worker, the bigger its
 * batches. The statement's cost is mostly per statement, not per attempt:
 * several at once make many small statements, each paying that cost, so
 * PostgreSQL spends more CPU and fewer deliveries go out a second
 * (docs/benchmark.md, "Records one at a time"). More than one stays correct:
 * each batch's statement only releases the slots it records and hands on at
 * most as many (hand-on.ts), and a subscription's pause row is updated under
 * its row lock, each statement on top of the last.
 */
const RECORDING_AT_ONCE = 1;

/** Claims that fail (the database is down) are tried again after these waits. */
const FAILURE_BACKOFF: Backoff = { baseMs: 500, maxMs: 30_000 };

export class DeliveryWorker {
  private readonly loop: PollLoop;
  private inFlight = 0;
  /** This process's POSTs in flight, per subscription. */
  private readonly inFlightTo = new Map<bigint, number>();
  /**
   * stop()'s wait for the last POST in flight. A count (inFlight) and this,
   * not a Set of the tasks: a long-lived Set or Map that gains and loses an
   * entry per task leaves, once a full collection has moved it to V8's old
   * generation, each replaced table pointing at the next, and every young
   * collection then keeps the entries' objects (docs in gateway/connections.ts).
   */
  private drained: (() => void) | undefined;
  /** The last claim got as many rows as it asked for: more may be due. */
  private backlog = false;
  private readonly toRecord: { record: AttemptRecord; resolve: () => void; reject: (err: unknown) => void }[] = [];
  /** Record statements running (recordQueued loops), at most RECORDING_AT_ONCE. */
  private recording = 0;
  /** Deliveries whose recorded batch handed their subscription's slot on (hand-on.ts): no claim is needed to refill it. */
  private readonly handedOn = new WeakSet<ClaimedDelivery>();
  private stopping = false;
  private readonly watermark: FanOutWatermark | undefined;
  private readonly attempts: DeliveryAttempts;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.attempts = new DeliveryAttempts(options, (record) => this.record(record));
    if (options.fanOutFloor) this.watermark = new FanOutWatermark(options.fanOutFloor, options.logger);
    this.loop = new PollLoop({
      round: () => this.round(),
      backoff: FAILURE_BACKOFF,
      onError: (err, retryInMs) => options.logger.error({ err, retryInMs }, "delivery worker failed"),
      // New deliveries (the fan-out, a manual retry) are tried at once, even after a failed claim.
      wakeEndsBackoff: true,
    });
  }

  start(): void {
    this.loop.start();
  }

  /** Deliveries are due: look now. */
  wake(): void {
    this.loop.wake();
  }

  /**
   * The fan-out here recorded deliveries (before acknowledging them) for
   * `subscriptions`: look now, unless each of them has its cap in flight
   * here (then no claim could give it a row; a slot freeing up is handed on
   * or wakes the loop). Ordered ones wait for the acknowledgement to raise
   * the watermark, so look again a few times shortly after.
   */
  fannedOut(ordered: boolean, subscriptions: bigint[] = []): void {
    const cap = this.options.maxInFlightPerSubscription;
    const allAtCap =
      cap !== undefined &&
      subscriptions.length > 0 &&
      subscriptions.every((id) => (this.inFlightTo.get(id) ?? 0) >= cap);
    if (!allAtCap || ordered) this.wake();
    if (ordered) this.watermark?.relookSoon(() => this.wake());
  }

  /** Stops claiming and waits for the POSTs in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.watermark?.stop();
    await this.loop.stop();
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
  }

  /** Claims what fits in the free slots; resolves to the wait before the next claim. */
  private async round(): Promise<number> {
    const free = this.options.concurrency - this.inFlight;
    // Full: wait for a slot (a finishing POST wakes the loop), at most a poll.
    if (free <= 0) return this.options.pollMs;
    const claimed = await this.options.store.claim(
      free,
      this.options.leaseSeconds,
      this.options.maxInFlightPerSubscription,
      await this.watermark?.current(),
    );
    this.backlog = claimed.length === free;
    if (claimed.length > 0) await this.dispatch(claimed);
    return this.backlog ? 0 : this.options.pollMs;
  }

  /** Reads the subscriptions of the claimed rows (one call per organisation and event type), then starts their POSTs. */
  private async dispatch(claimed: ClaimedDelivery[]): Promise<void> {
    const groups = new Map<string, ClaimedDelivery[]>();
    for (const d of claimed) {
      const key = `${d.organisationId} ${d.eventType}`;
      groups.set(key, [...(groups.get(key) ?? []), d]);
    }
    for (const rows of groups.values()) {
      const first = rows[0]!;
      const read = async () =>
        (
          await this.options.webhook.listSubscribers({
            organisationId: first.organisationId,
            eventType: eventTypeOf(first.eventType),
            includeDisabled: true,
          })
        ).subscribers;
      let byId: Map<bigint, Subscriber>;
      try {
        const cache = this.options.subscriberCache;
        byId = subscribersById(
          cache ? await cache.subscribers(first.organisationId, first.eventType, read) : await read(),
        );
        // A subscription created after the cached read: read again before calling it deleted.
        if (cache && rows.some((d) => !byId.has(d.subscriptionId)))
          byId = subscribersById(await cache.subscribers(first.organisationId, first.eventType, read, true));
      } catch (err) {
        this.options.logger.warn(
          { err, deliveries: rows.length },
          "subscriptions could not be read; deliveries handed back",
        );
        await Promise.allSettled(rows.map((d) => this.options.store.release(d, 5)));
        continue;
      }
      for (const d of rows) {
        const subscriber = byId.get(d.subscriptionId);
        if (subscriber?.disabled) {
          await this.options.store.cancel(d, "the subscription was disabled");
          continue;
        }
        if (!subscriber || subscriber.clientId !== d.clientId) {
          await this.options.store.cancel(d, "the subscription was deleted");
          // Its other waiting deliveries too, at once: one claim each (a few at a time, within its
          // cap) would keep the workers busy with a deleted subscription's queue long after it is gone.
          await this.options.store.cancelSubscription(d.subscriptionId);
          continue;
        }
        this.inFlight++;
        this.inFlightTo.set(d.subscriptionId, (this.inFlightTo.get(d.subscriptionId) ?? 0) + 1);
        void this.attempts
          .deliver(d, subscriber)
          .catch((err) =>
            this.options.logger.error(
              { err, deliveryId: d.id.toString() },
              "delivery not recorded; it comes back after its claim lease",
            ),
          )
          .finally(() => {
            this.inFlight--;
            const atCap = this.slotFreed(d.subscriptionId) && !this.handedOn.has(d);
            if (this.inFlight === 0) this.drained?.();
            // A slot is free: refill it at once if more rows may be due, or if the
            // subscription was at its cap here (its next rows may be waiting for this slot)
            // and the slot was not handed on, or was ordered (its next one is the head now).
            if (this.backlog || atCap || d.ordered) this.wake();
          });
      }
    }
  }

  /** Counts a subscription's POST as finished; true when the subscription had its cap in flight here. */
  private slotFreed(subscriptionId: bigint): boolean {
    const n = this.inFlightTo.get(subscriptionId) ?? 1;
    if (n <= 1) this.inFlightTo.delete(subscriptionId);
    else this.inFlightTo.set(subscriptionId, n - 1);
    return this.options.maxInFlightPerSubscription !== undefined && n >= this.options.maxInFlightPerSubscription;
  }

  /** Records the attempt together with the others that finished meanwhile (one statement per batch). */
  private record(record: AttemptRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.toRecord.push({ record, resolve, reject });
      if (this.recording < RECORDING_AT_ONCE) void this.recordQueued();
    });
  }

  /**
   * Records the queued attempts, a batch at a time (RECORDING_AT_ONCE
   * statements at once; what finishes meanwhile waits for the next batch).
   * While this worker's last
   * claim left slots free (no other owner's rows were waiting for them), the
   * batch's successes hand their slots on to their subscriptions' next due
   * rows in the same statement (hand-on.ts), which are sent at once.
   */
  private async recordQueued(): Promise<void> {
    this.recording++;
    try {
      while (this.toRecord.length > 0) {
        const batch = this.toRecord.splice(0, 200);
        const handOn = this.backlog || this.stopping ? undefined : this.options.leaseSeconds;
        let next: ClaimedDelivery[];
        try {
          next = await this.options.store.recordMany(
            batch.map((b) => b.record),
            this.options.maxInFlightPerSubscription,
            handOn,
          );
        } catch (err) {
          for (const b of batch) b.reject(err);
          continue;
        }
        const handedTo = new Set(next.map((d) => d.subscriptionId));
        for (const b of batch) {
          if (handedTo.has(b.record.delivery.subscriptionId)) this.handedOn.add(b.record.delivery);
          b.resolve();
        }
        if (next.length === 0) continue;
        // Stopping meanwhile: handed back at once, for another worker (or this one's next start).
        if (this.stopping) await Promise.allSettled(next.map((d) => this.options.store.release(d, 0)));
        else
          this.dispatch(next).catch((err) =>
            this.options.logger.error(
              { err },
              "handed-on deliveries not dispatched; they come back after their claim lease",
            ),
          );
      }
    } finally {
      this.recording--;
    }
  }
}
