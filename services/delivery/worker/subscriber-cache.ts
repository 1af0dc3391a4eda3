// The worker's cache of ListSubscribers answers (per organisation and event
// type), so a busy subscription's next POST needs no round trip. The webhook
// service announces every change before its RPC answers
// (subscriptions-changed.ts) and the organisation's entries are dropped; with
// the bus down nothing is cached, and a read that began before a change was
// heard is not stored. Entries end at DELIVERY_SUBSCRIBER_CACHE_MS (0: no cache).
import type { Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Consumer, EventBus } from "../../shared/event-bus/event-bus.js";
import { listenSubscriptionsChanged } from "../../shared/event-bus/subscriptions-changed.js";
import type { Logger } from "../../shared/logger.js";

/** Bound on the (organisation, event type) pairs kept; the oldest goes first. */
const MAX_ENTRIES = 10_000;

export class SubscriberCache {
  private readonly entries = new Map<string, { subscribers: Subscriber[]; until: number }>();
  private generation = 0;
  private listening: Consumer | undefined;
  private stopWatching: (() => void) | undefined;

  private constructor(
    private readonly bus: EventBus | undefined,
    private readonly ttlMs: number,
  ) {}

  /** Listens for the announcements before anything is cached; ttlMs 0 or no bus: a cache that holds nothing. */
  static async open(bus: EventBus | undefined, ttlMs: number, logger: Logger): Promise<SubscriberCache> {
    const cache = new SubscriberCache(bus, ttlMs);
    if (bus && ttlMs > 0) {
      cache.stopWatching = bus.onConnectionChange(() => cache.clear());
      cache.listening = await listenSubscriptionsChanged(bus, (organisationId) => cache.drop(organisationId), logger);
    }
    return cache;
  }

  private get caching(): boolean {
    return this.listening !== undefined && this.bus!.connected;
  }

  /**
   * The organisation's subscribers of the event type, from the cache
   * (unless `fresh`), or read with `read` (and cached).
   */
  async subscribers(organisationId: string, eventType: string, read: () => Promise<Subscriber[]>, fresh = false) {
    if (!this.caching) return read();
    const key = `${organisationId} ${eventType}`;
    const entry = this.entries.get(key);
    if (entry && !fresh && Date.now() < entry.until) return entry.subscribers;
    const generation = this.generation;
    const subscribers = await read();
    if (generation === this.generation && this.caching) {
      this.entries.delete(key);
      this.entries.set(key, { subscribers, until: Date.now() + this.ttlMs });
      if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    }
    return subscribers;
  }

  /** An organisation's subscriptions changed ("": any organisation's). */
  drop(organisationId: string): void {
    this.generation++;
    if (!organisationId) {
      this.entries.clear();
      return;
    }
    for (const key of this.entries.keys()) if (key.startsWith(`${organisationId} `)) this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  async close(): Promise<void> {
    this.stopWatching?.();
    await this.listening?.stop();
    this.clear();
  }
}
