// The event bus the services publish to and consume from: NATS JetStream in
// production, an in-process bus in the embedded start. Both deliver at least
// once; a handler that throws gets the message again later.
import type { Backoff } from "../loop/backoff.js";

/** W3C Trace Context of a message: its two headers (tracestate only ever beside a traceparent). */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

export interface BusMessage extends TraceHeaders {
  subject: string;
  data: Uint8Array;
  /** The event id (Nats-Msg-Id): the same on every redelivery. */
  msgId: string;
  deliveryCount: number;
  /** The message's sequence in the stream (JetStream only). */
  streamSequence?: number;
}

export interface ConsumerOptions {
  /** Durable consumer name: consumers with one name share the work and the position. */
  durable: string;
  /** One subject under the bus's prefix, wildcards allowed: several filters would need nats-server 2.10. */
  subject: string;
  /** Redelivery delay after a first failure, doubling per failure up to maxRetryDelayMs (defaults 1 s, 60 s). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Deliveries before a message is given up (logged as an error, terminated); default 30. */
  maxDeliver?: number;
  /** How long the broker waits for an ack (default 30 s). */
  ackWaitMs?: number;
  /** JetStream max_ack_pending. 1 keeps the stream's order even across failures. */
  maxAckPending?: number;
  /**
   * Where a consumer created anew starts: after the last sequence its owner recorded (undefined: the stream's start).
   */
  startAfterSequence?: () => Promise<number | undefined>;
}

/** A consumer's redelivery delays: retryDelayMs after the first failure, doubling, up to maxRetryDelayMs. */
export function redeliveryBackoff(options: Pick<ConsumerOptions, "retryDelayMs" | "maxRetryDelayMs">): Backoff {
  return { baseMs: options.retryDelayMs ?? 1000, maxMs: options.maxRetryDelayMs ?? 60_000 };
}

export type MessageHandler = (message: BusMessage) => Promise<void>;

/**
 * Up to `batchSize` messages in stream order, acknowledged together; a failed batch comes again before anything later.
 */
export interface BatchConsumerOptions extends ConsumerOptions {
  batchSize: number;
}

export type BatchHandler = (messages: BusMessage[]) => Promise<void>;

/** A non-durable subscription's handler: its failure is logged, never retried. */
export type SubscriptionHandler = (message: BusMessage) => void | Promise<void>;

export interface Consumer {
  stop(): Promise<void>;
}

export interface OutgoingMessage extends TraceHeaders {
  subject: string;
  data: Uint8Array;
  msgId: string;
}

/** The headers present, as fields (none for none): what a delivered message carries. */
export function traceFields(trace: TraceHeaders | undefined): TraceHeaders {
  if (!trace?.traceparent) return {};
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

/** The first `published` messages were stored; `error`: why the next was not (absent: it may go again at once). */
export interface PublishedInOrder {
  published: number;
  error?: unknown;
}

/** What a publisher (the outbox relay) hears of `publishAll` as it goes. */
export interface PublishHooks {
  /** Asked before each send; false stops the call there. The relay renews its lease here. */
  beforeSend(): Promise<boolean>;
  /** The message is stored (every consumer will have it). */
  published(msgId: string): void;
  /** Some consumers only, or none, have it (PublishDeferredError): publish it again at or after `retryAt`. */
  deferred(msgId: string, retryAt: number | undefined, reason: PublishDeferredError): void;
}

export interface EventBus {
  readonly kind: "nats" | "in-process";
  /** Resolves once the broker stored the message; the in-process bus may reject with a PublishDeferredError. */
  publish(subject: string, data: Uint8Array, msgId: string, trace?: TraceHeaders): Promise<void>;
  /** Sends all at once; the broker stores a message only after the one before it: always a prefix of the call. */
  publishInOrder?(messages: readonly OutgoingMessage[]): Promise<PublishedInOrder>;
  /** Publishes in order as this bus does it best (publishAll below); without it, one by one. */
  publishAll?(messages: readonly OutgoingMessage[], hooks: PublishHooks): Promise<{ error?: unknown }>;
  consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer>;
  /** Durable, in batches; a bus without it is consumed one message at a time (consumeInBatches). */
  consumeBatches?(options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer>;
  /**
   * Non-durable, every process, while connected (NATS core): for caches, which drop all when `connected` goes false.
   */
  subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer>;
  /** To every listener of `topic` in every process (never stored); resolves once the broker has it. */
  announce(topic: string, data: Uint8Array): Promise<void>;
  /** Hears the announcements of `topic` from now on, while connected. */
  listen(topic: string, handler: SubscriptionHandler): Promise<Consumer>;
  /** JetStream: a sequence at or below which `durable` acknowledged everything; undefined when it does not exist. */
  ackFloor?(durable: string): Promise<number | undefined>;
  /** True while the broker connection is up (always, in process). */
  readonly connected: boolean;
  onConnectionChange(listener: (connected: boolean) => void): () => void;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The bus's own publishAll, or one by one: a deferred one lets those behind it go, any other failure ends the call. */
export async function publishAll(
  bus: EventBus,
  messages: readonly OutgoingMessage[],
  hooks: PublishHooks,
): Promise<{ error?: unknown }> {
  if (bus.publishAll) return bus.publishAll(messages, hooks);
  for (const m of messages) {
    if (!(await hooks.beforeSend())) return {};
    try {
      await bus.publish(m.subject, m.data, m.msgId, m);
      hooks.published(m.msgId);
    } catch (err) {
      if (!(err instanceof PublishDeferredError)) return { error: err };
      hooks.deferred(m.msgId, err.retryAt, err);
    }
  }
  return {};
}

export function consumeInBatches(
  bus: EventBus,
  options: BatchConsumerOptions,
  handler: BatchHandler,
): Promise<Consumer> {
  if (bus.consumeBatches) return bus.consumeBatches(options, handler);
  return bus.consume(options, (message) => handler([message]));
}

/** Subjects are `<prefix>.<name>`, e.g. bizcard.contact.created. */
export function subjectFor(prefix: string, name: string): string {
  return `${prefix}.${name}`;
}

export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== "*" && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}

/**
 * The bus took the message for some consumers only, or none yet: publish it again later (those that have it skip it).
 */
export class PublishDeferredError extends Error {
  /** When to publish it again (Date.now() time); undefined: the bus cannot tell. */
  readonly retryAt: number | undefined = undefined;
}

/** The in-process bus has no consumer for a subject: the event must wait (the outbox keeps it). */
export class NoConsumerError extends PublishDeferredError {
  constructor(subject: string) {
    super(`no consumer for ${subject} yet`);
    this.name = "NoConsumerError";
  }
}
