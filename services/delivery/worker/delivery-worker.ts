// The workers: claim due deliveries (delivery-claim.ts), look up each
// subscription as it is NOW (deleted or disabled: not sent; its current
// target_url and secret), POST (delivery-attempt.ts) and record the attempts
// in batches. Up to `concurrency` POSTs are in flight; a freed slot is refilled
// at once while more may be due, else the worker waits for a wake-up or its poll.
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

interface DeliveryWorkerOptions extends AttemptOptions {
  /** Undefined: subscribers are read for every batch. */
  subscriberCache?: SubscriberCache;
  concurrency: number;
  /** POSTs in flight to one subscription, across every process; undefined: no cap. */
  maxInFlightPerSubscription?: number;
  pollMs: number;
  leaseSeconds: number;
  /** The fan-out consumer's ack floor (fan-out-watermark.ts); undefined: the in-process bus, no watermark. */
  fanOutFloor?: () => Promise<number | undefined>;
}

const subscribersById = (subscribers: Subscriber[]) => new Map(subscribers.map((s) => [s.subscriptionId, s]));

/** Claims that fail (the database is down) are tried again after these waits. */
const FAILURE_BACKOFF: Backoff = { baseMs: 500, maxMs: 30_000 };

export class DeliveryWorker {
  private readonly loop: PollLoop;
  private inFlight = 0;
  /** This process's POSTs in flight, per subscription. */
  private readonly inFlightTo = new Map<bigint, number>();
  /**
   * stop()'s wait for the last POST: a count, not a Set of tasks, which
   * would churn V8's old generation (gateway/connections.ts).
   */
  private drained: (() => void) | undefined;
  /** The last claim got as many rows as it asked for: more may be due. */
  private backlog = false;
  private readonly toRecord: { record: AttemptRecord; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private recording = false;
  /**
   * Deliveries whose recorded batch handed their subscription's slot on (hand-on.ts): no claim is needed to refill it.
   */
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

  start = (): void => this.loop.start();
  wake = (): void => this.loop.wake();

  /**
   * The fan-out here recorded deliveries for `subscriptions`: look now, unless
   * each has its cap in flight here (a freed slot wakes the loop). Ordered ones
   * wait for the ack to raise the watermark: look again shortly after.
   */
  fannedOut(ordered: boolean, subscriptions: bigint[] = []): void {
    const cap = this.options.maxInFlightPerSubscription;
    const atCap = (id: bigint) => cap !== undefined && (this.inFlightTo.get(id) ?? 0) >= cap;
    const allAtCap = subscriptions.length > 0 && subscriptions.every(atCap);
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
    const { store, leaseSeconds, maxInFlightPerSubscription } = this.options;
    const claimed = await store.claim(free, leaseSeconds, maxInFlightPerSubscription, await this.watermark?.current());
    this.backlog = claimed.length === free;
    if (claimed.length > 0) await this.dispatch(claimed);
    return this.backlog ? 0 : this.options.pollMs;
  }

  /**
   * Reads the subscriptions of the claimed rows (one call per organisation and event type), then starts their POSTs.
   */
  private async dispatch(claimed: ClaimedDelivery[]): Promise<void> {
    const groups = new Map<string, ClaimedDelivery[]>();
    for (const d of claimed) {
      const key = `${d.organisationId} ${d.eventType}`;
      groups.set(key, [...(groups.get(key) ?? []), d]);
    }
    for (const rows of groups.values()) {
      const { organisationId, eventType } = rows[0]!;
      const lookup = { organisationId, eventType: eventTypeOf(eventType), includeDisabled: true };
      const read = async () => (await this.options.webhook.listSubscribers(lookup)).subscribers;
      let byId: Map<bigint, Subscriber>;
      try {
        const cache = this.options.subscriberCache;
        byId = subscribersById(cache ? await cache.subscribers(organisationId, eventType, read) : await read());
        // A subscription created after the cached read: read again before calling it deleted.
        if (cache && rows.some((d) => !byId.has(d.subscriptionId)))
          byId = subscribersById(await cache.subscribers(organisationId, eventType, read, true));
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
          // Its whole queue at once, not one claim at a time.
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
            // Refill at once if more may be due, if the subscription's next rows may wait for
            // this slot (at its cap, not handed on), or if its next ordered one is the head now.
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
      // One record statement at a time: the attempts that finish meanwhile make the next batch, and a
      // statement's cost is mostly per statement (docs/benchmark.md, "Records one at a time").
      if (!this.recording) void this.recordQueued();
    });
  }

  /**
   * Records the queued attempts a batch at a time. While the last claim left
   * slots free (no other owner waits), the successes hand their slots on
   * (hand-on.ts) and the rows handed on are sent at once.
   */
  private async recordQueued(): Promise<void> {
    this.recording = true;
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
      this.recording = false;
    }
  }
}
