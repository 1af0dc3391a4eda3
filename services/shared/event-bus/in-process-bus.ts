// The embedded default's bus, used only when NATS_URL is unset and every
// service runs in one process. publish() resolves after every matching
// durable consumer has handled the message, so the outbox row is marked sent
// only once the event is safe with its consumers; a handler failure rejects
// publish and the outbox relay tries again later (at least once, as JetStream).
// With no consumer for a subject yet, publish rejects: the row stays in the
// outbox until one registers, as a stream would keep the message.
// Non-durable subscribers (subscribe) get every message first, as NATS core
// subscribers do; a subject with subscribers but no durable consumer is
// delivered to them and resolves, and their failures are logged, not thrown.
import {
  NoConsumerError,
  subjectFor,
  subjectMatches,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
  type SubscriptionHandler,
} from "./event-bus.js";
import type { Logger } from "../logger.js";

interface Registration {
  options: ConsumerOptions;
  pattern: string;
  handler: MessageHandler;
  deliveries: Map<string, number>;
}

export class InProcessBus implements EventBus {
  readonly kind = "in-process" as const;
  private readonly consumers = new Map<string, Registration>();
  private readonly delivered = new Map<string, Set<string>>();
  private readonly subscribers = new Set<{ pattern: string; handler: SubscriptionHandler }>();
  readonly connected = true;

  constructor(
    private readonly prefix: string,
    private readonly logger?: Logger,
  ) {}

  async publish(subject: string, data: Uint8Array, msgId: string): Promise<void> {
    const matching = [...this.consumers.values()].filter((reg) => subjectMatches(reg.pattern, subject));
    const listening = [...this.subscribers].filter((sub) => subjectMatches(sub.pattern, subject));
    // A stream would keep the message for consumers to come; here the outbox row does.
    if (matching.length === 0 && listening.length === 0) throw new NoConsumerError(subject);
    for (const sub of listening) {
      try {
        await sub.handler({ subject, data: data.slice(), msgId, deliveryCount: 1 });
      } catch (err) {
        this.logger?.warn({ err, subject }, "subscriber failed; the message is not redelivered to it");
      }
    }
    for (const reg of matching) {
      const done = this.delivered.get(reg.options.durable)!;
      if (done.has(msgId)) continue; // this durable already has it: the duplicate window
      const count = (reg.deliveries.get(msgId) ?? 0) + 1;
      reg.deliveries.set(msgId, count);
      await reg.handler({ subject, data: data.slice(), msgId, deliveryCount: count });
      reg.deliveries.delete(msgId);
      done.add(msgId);
      if (done.size > 100_000) done.delete(done.values().next().value!);
    }
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    if (this.consumers.has(options.durable)) throw new Error(`consumer ${options.durable} already registered`);
    this.consumers.set(options.durable, {
      options,
      pattern: subjectFor(this.prefix, options.subject),
      handler,
      deliveries: new Map(),
    });
    if (!this.delivered.has(options.durable)) this.delivered.set(options.durable, new Set());
    return { stop: async () => void this.consumers.delete(options.durable) };
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
  }
}
