// The embedded default's bus, used only when NATS_URL is unset and every
// service runs in one process. There is no stream: the publishing service's
// outbox row is the stored message, and publish() is one delivery attempt of
// it to every matching durable consumer that does not have it yet. It
// resolves once every one of them has handled the message, so the outbox row
// is marked sent only once the event is safe with all its consumers (at least
// once, as JetStream).
//
// ONE CONSUMER'S FAILURE HOLDS BACK ONLY THAT CONSUMER. Each durable consumer
// keeps its own position, as a JetStream consumer with max_ack_pending 1 does:
// - a consumer that already handled the message (same msgId: the duplicate
//   window) is skipped, so publishing a message again reaches only the
//   consumers still missing it;
// - a handler that throws blocks its consumer on that message until
//   ConsumerOptions.retryDelayMs (doubling up to maxRetryDelayMs) has passed;
//   after maxDeliver attempts the message is given up for it (logged as an
//   error), as JetStream terminates it;
// - while a consumer is blocked, every other message for it is refused
//   without running its handler: it gets its messages in publish order, the
//   failed one first, once that one is published again and succeeds;
// - the other consumers get the message at once, whatever the blocked one does.
// A publish that some consumer refused (failed, held back, or not yet due)
// rejects with ConsumersBehindError (a PublishDeferredError), saying when to
// try again; the outbox relay then keeps the row and goes on with the rows
// behind it (publishOneByOne in event-bus.ts, and DEFERRED in
// ../outbox/relay.ts). Publishing the refused rows again in their order is
// the publisher's part, as a stream's redelivery would be.
//
// With no consumer for a subject yet, publish rejects with NoConsumerError:
// the row stays in the outbox until one registers, as a stream would keep the
// message. So that a consumer registering later still gets its messages in
// order, it starts blocked on the oldest message refused that way that it
// matches: newer messages wait for it until it is published again.
//
// Non-durable subscribers (subscribe) get every message first, once per msgId,
// as NATS core subscribers do; a subject with subscribers but no durable
// consumer is delivered to them and resolves, and their failures are logged,
// not thrown.
import {
  NoConsumerError,
  PublishDeferredError,
  publishOneByOne,
  subjectFor,
  subjectMatches,
  traceFields,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
  type OutgoingMessage,
  type PublishHooks,
  type SubscriptionHandler,
  type TraceHeaders,
  redeliveryBackoff,
} from "./event-bus.js";
import { backoffDelay } from "../loop/backoff.js";
import type { Logger } from "../logger.js";

/** Messages remembered per consumer (handled) and for subscribers (announced): the duplicate window. */
const WINDOW = 100_000;

/**
 * Some matching consumers did not take the message: their handler failed, or
 * they are held behind an earlier message of theirs that failed. The others
 * have it. Publish it again at or after `retryAt` (Date.now() time): only the
 * consumers still missing it get it.
 */
export class ConsumersBehindError extends PublishDeferredError {
  constructor(
    readonly subject: string,
    /** Consumers whose handler failed on this message (or whose retry is not due yet). */
    readonly failed: string[],
    /** Consumers held behind an earlier message of theirs. */
    readonly heldBack: string[],
    override readonly retryAt: number,
  ) {
    super(
      `${subject}: ${[
        failed.length ? `failed for ${failed.join(", ")}` : "",
        heldBack.length ? `held back for ${heldBack.join(", ")}` : "",
      ]
        .filter(Boolean)
        .join("; ")}`,
    );
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

/** Adds to an insertion-ordered set, forgetting the oldest past the window. */
function remember(set: Set<string>, id: string): void {
  set.add(id);
  if (set.size > WINDOW) set.delete(set.values().next().value!);
}

export class InProcessBus implements EventBus {
  readonly kind = "in-process" as const;
  private readonly consumers = new Map<string, Registration>();
  private readonly delivered = new Map<string, Set<string>>();
  private readonly subscribers = new Set<{ pattern: string; handler: SubscriptionHandler }>();
  /** Listeners of announcements (announce), by topic. */
  private readonly listeners = new Set<{ topic: string; handler: SubscriptionHandler }>();
  /** Messages already given to the subscribers. */
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
      if (!this.waiting.has(msgId)) {
        this.waiting.set(msgId, subject);
        if (this.waiting.size > WINDOW) this.waiting.delete(this.waiting.keys().next().value!);
      }
      throw new NoConsumerError(subject);
    }
    if (!this.announced.has(msgId)) {
      remember(this.announced, msgId);
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
    for (const reg of matching) {
      const { durable } = reg.options;
      const done = this.delivered.get(durable)!;
      if (done.has(msgId)) continue; // this durable already has it: the duplicate window
      if (reg.blocked && reg.blocked.msgId !== msgId) {
        heldBack.push(durable);
        retryAt = Math.min(retryAt, reg.blocked.retryAt);
        continue;
      }
      if (reg.blocked && Date.now() < reg.blocked.retryAt) {
        failed.push(durable);
        retryAt = Math.min(retryAt, reg.blocked.retryAt);
        continue;
      }
      const count = (reg.deliveries.get(msgId) ?? 0) + 1;
      reg.deliveries.set(msgId, count);
      try {
        await reg.handler({ subject, data: data.slice(), msgId, deliveryCount: count, ...traced });
      } catch (err) {
        const maxDeliver = reg.options.maxDeliver ?? 30;
        if (count < maxDeliver) {
          const delay = backoffDelay(count, redeliveryBackoff(reg.options));
          reg.blocked = { msgId, retryAt: Date.now() + delay };
          this.logger?.warn(
            { err, subject, msgId, consumer: durable, deliveryCount: count, retryInMs: delay },
            "consumer failed; retried later, its later messages wait",
          );
          failed.push(durable);
          retryAt = Math.min(retryAt, reg.blocked.retryAt);
          continue;
        }
        this.logger?.error(
          { err, subject, msgId, consumer: durable, deliveryCount: count },
          "consumer failed every delivery; message given up for it",
        );
      }
      reg.deliveries.delete(msgId);
      reg.blocked = undefined;
      remember(done, msgId);
    }
    if (failed.length || heldBack.length) throw new ConsumersBehindError(subject, failed, heldBack, retryAt);
    this.waiting.delete(msgId);
  }

  /** One by one: a message some consumers refused is deferred, and the ones behind it still go. */
  publishAll(messages: readonly OutgoingMessage[], hooks: PublishHooks): Promise<{ error?: unknown }> {
    return publishOneByOne(this, messages, hooks);
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    if (this.consumers.has(options.durable)) throw new Error(`consumer ${options.durable} already registered`);
    const pattern = subjectFor(this.prefix, options.subject);
    if (!this.delivered.has(options.durable)) this.delivered.set(options.durable, new Set());
    const done = this.delivered.get(options.durable)!;
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
