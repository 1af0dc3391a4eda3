// The embedded start's bus (NATS_URL unset). No stream: the outbox row is the
// stored message, and publish() is one delivery attempt of it to every
// matching durable consumer still missing it. Each consumer keeps its own
// position, as a JetStream consumer with max_ack_pending 1: a failed handler
// blocks only its consumer on that message until the retry delay has passed.
// A publish some consumer refused rejects with ConsumersBehindError (or
// NoConsumerError): the outbox relay publishes it again later, in order.
import {
  NoConsumerError,
  PublishDeferredError,
  subjectFor,
  subjectMatches,
  traceFields,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
  type SubscriptionHandler,
  type TraceHeaders,
  redeliveryBackoff,
} from "./event-bus.js";
import { backoffDelay } from "../loop/backoff.js";
import type { Logger } from "../logger.js";

/** Messages remembered per consumer (handled) and for subscribers (announced): the duplicate window. */
const WINDOW = 100_000;

/** Some matching consumers did not take the message (the others have it): publish it again at or after `retryAt`. */
export class ConsumersBehindError extends PublishDeferredError {
  constructor(
    readonly subject: string,
    /** Consumers whose handler failed on this message (or whose retry is not due yet). */
    readonly failed: string[],
    /** Consumers held behind an earlier message of theirs. */
    readonly heldBack: string[],
    override readonly retryAt: number,
  ) {
    const parts = [
      failed.length ? `failed for ${failed.join(", ")}` : "",
      heldBack.length ? `held back for ${heldBack.join(", ")}` : "",
    ];
    super(`${subject}: ${parts.filter(Boolean).join("; ")}`);
    this.name = "ConsumersBehindError";
  }
}

interface Registration {
  options: ConsumerOptions;
  pattern: string;
  handler: MessageHandler;
  /** Attempts so far of the message it is blocked on. */
  deliveries: Map<string, number>;
  /** The message this consumer must take before any other, and when it may be tried again. */
  blocked?: { msgId: string; retryAt: number };
}

/** Forgets the oldest entries of an insertion-ordered set or map past the window. */
function trim(entries: { size: number; keys(): Iterator<string>; delete(key: string): unknown }): void {
  if (entries.size > WINDOW) entries.delete(entries.keys().next().value!);
}

export class InProcessBus implements EventBus {
  readonly kind = "in-process" as const;
  private readonly consumers = new Map<string, Registration>();
  private readonly delivered = new Map<string, Set<string>>();
  private readonly subscribers = new Set<{ pattern: string; handler: SubscriptionHandler }>();
  private readonly listeners = new Set<{ topic: string; handler: SubscriptionHandler }>();
  private readonly announced = new Set<string>();
  /** Messages refused for want of any consumer, oldest first: msgId → subject. */
  private readonly waiting = new Map<string, string>();
  readonly connected = true;

  constructor(
    private readonly prefix: string,
    private readonly logger?: Logger,
  ) {}

  async publish(subject: string, data: Uint8Array, msgId: string, trace?: TraceHeaders): Promise<void> {
    const traced = traceFields(trace);
    const matching = [...this.consumers.values()].filter((reg) => subjectMatches(reg.pattern, subject));
    const listening = [...this.subscribers].filter((sub) => subjectMatches(sub.pattern, subject));
    // A stream would keep the message for consumers to come; here the outbox row does.
    if (matching.length === 0 && listening.length === 0) {
      if (!this.waiting.has(msgId)) trim(this.waiting.set(msgId, subject));
      throw new NoConsumerError(subject);
    }
    if (!this.announced.has(msgId)) {
      trim(this.announced.add(msgId));
      for (const sub of listening) {
        try {
          await sub.handler({ subject, data: data.slice(), msgId, deliveryCount: 1, ...traced });
        } catch (err) {
          this.logger?.warn({ err, subject }, "subscriber failed; the message is not redelivered to it");
        }
      }
    }
    const failed: string[] = [];
    const heldBack: string[] = [];
    let retryAt = Infinity;
    const refuse = (list: string[], durable: string, at: number) => {
      list.push(durable);
      retryAt = Math.min(retryAt, at);
    };
    for (const reg of matching) {
      const { durable } = reg.options;
      const done = this.delivered.get(durable)!;
      if (done.has(msgId)) continue; // the duplicate window
      // Held behind an earlier message of its own, or this one's retry is not due yet.
      if (reg.blocked && (reg.blocked.msgId !== msgId || Date.now() < reg.blocked.retryAt)) {
        refuse(reg.blocked.msgId !== msgId ? heldBack : failed, durable, reg.blocked.retryAt);
        continue;
      }
      const count = (reg.deliveries.get(msgId) ?? 0) + 1;
      reg.deliveries.set(msgId, count);
      try {
        await reg.handler({ subject, data: data.slice(), msgId, deliveryCount: count, ...traced });
      } catch (err) {
        if (count < (reg.options.maxDeliver ?? 30)) {
          const delay = backoffDelay(count, redeliveryBackoff(reg.options));
          reg.blocked = { msgId, retryAt: Date.now() + delay };
          this.logger?.warn(
            { err, subject, msgId, consumer: durable, deliveryCount: count, retryInMs: delay },
            "consumer failed; retried later, its later messages wait",
          );
          refuse(failed, durable, reg.blocked.retryAt);
          continue;
        }
        this.logger?.error(
          { err, subject, msgId, consumer: durable, deliveryCount: count },
          "consumer failed every delivery; message given up for it",
        );
      }
      reg.deliveries.delete(msgId);
      reg.blocked = undefined;
      trim(done.add(msgId));
    }
    if (failed.length || heldBack.length) throw new ConsumersBehindError(subject, failed, heldBack, retryAt);
    this.waiting.delete(msgId);
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    if (this.consumers.has(options.durable)) throw new Error(`consumer ${options.durable} already registered`);
    const pattern = subjectFor(this.prefix, options.subject);
    const done = this.delivered.get(options.durable) ?? new Set();
    this.delivered.set(options.durable, done);
    // The oldest message of its subjects that found no consumer comes first.
    const oldest = [...this.waiting].find(([msgId, subject]) => subjectMatches(pattern, subject) && !done.has(msgId));
    this.consumers.set(options.durable, {
      options,
      pattern,
      handler,
      deliveries: new Map(),
      ...(oldest ? { blocked: { msgId: oldest[0], retryAt: 0 } } : {}),
    });
    return { stop: async () => void this.consumers.delete(options.durable) };
  }

  async announce(topic: string, data: Uint8Array): Promise<void> {
    for (const listener of [...this.listeners]) {
      if (listener.topic !== topic) continue;
      try {
        await listener.handler({ subject: topic, data: data.slice(), msgId: "", deliveryCount: 1 });
      } catch (err) {
        this.logger?.warn({ err, topic }, "listener failed");
      }
    }
  }

  async listen(topic: string, handler: SubscriptionHandler): Promise<Consumer> {
    const listener = { topic, handler };
    this.listeners.add(listener);
    return { stop: async () => void this.listeners.delete(listener) };
  }

  async subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer> {
    const sub = { pattern: subjectFor(this.prefix, subject), handler };
    this.subscribers.add(sub);
    return { stop: async () => void this.subscribers.delete(sub) };
  }

  onConnectionChange(_listener: (connected: boolean) => void): () => void {
    return () => {}; // in process: never disconnected
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.consumers.clear();
    this.subscribers.clear();
    this.listeners.clear();
  }
}
