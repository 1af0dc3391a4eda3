// The event bus the services publish to and consume from: NATS JetStream in
// production, an in-process bus in the embedded start. Both deliver at least
// once; a handler that throws gets the message again later.
import type { Backoff } from "../loop/backoff.js";

export interface BusMessage {
  subject: string;
  data: Uint8Array;
  /** The event id (Nats-Msg-Id): the same on every redelivery. */
  msgId: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** The message's sequence in the stream (JetStream only). */
  streamSequence?: number;
  /** W3C traceparent of the work that made the event (header `traceparent`), when it had one. */
  traceparent?: string;
  /** W3C tracestate beside it (header `tracestate`), when it had one. */
  tracestate?: string;
}

export interface ConsumerOptions {
  /** Durable consumer name: consumers with one name share the work and the position. */
  durable: string;
  /**
   * One subject under the bus's prefix, wildcards allowed, e.g. "contact.>".
   * One, not several: a consumer filtering on several subjects needs
   * nats-server 2.10 (filter_subjects); a single filter works on 2.9 too.
   */
  subject: string;
  /**
   * Redelivery delay after a handler's first failure; it doubles on each
   * further failure of the same message, up to maxRetryDelayMs (default 1 s).
   */
  retryDelayMs?: number;
  /** The longest redelivery delay (default 60 s). */
  maxRetryDelayMs?: number;
  /**
   * How many times a message is handed out before it is given up (logged as an
   * error and terminated). Default 30: with the default delays, about 25 minutes.
   */
  maxDeliver?: number;
  /**
   * How long the broker waits for an ack before handing the message out again
   * (default 30 s). While a handler runs, the consumer tells the broker it is
   * still working every third of this.
   */
  ackWaitMs?: number;
  /**
   * Messages handed out and not yet acknowledged, at most (JetStream
   * max_ack_pending). 1 keeps the stream's order even across failures: a
   * failed message is retried before any later one is handed out.
   */
  maxAckPending?: number;
  /**
   * When the durable consumer has to be created (first start, or it was lost):
   * the last stream sequence this consumer's owner has recorded as handled. The
   * consumer then starts right after it, so that nothing handled is handed out
   * again and nothing published meanwhile is skipped. Undefined: from the
   * start of the stream.
   */
  startAfterSequence?: () => Promise<number | undefined>;
}

/** A consumer's redelivery delays: retryDelayMs after the first failure, doubling, up to maxRetryDelayMs. */
export function redeliveryBackoff(options: Pick<ConsumerOptions, "retryDelayMs" | "maxRetryDelayMs">): Backoff {
  return { baseMs: options.retryDelayMs ?? 1000, maxMs: options.maxRetryDelayMs ?? 60_000 };
}

export type MessageHandler = (message: BusMessage) => Promise<void>;

/**
 * A batch consumer's options: the handler gets up to `batchSize` messages
 * that were in hand together, in stream order, and they are acknowledged
 * together once it resolved. At most `batchSize` messages are handed out and
 * not yet acknowledged (max_ack_pending = batchSize; maxAckPending is not
 * used). Batches are handled one at a time, in order; a batch whose handler
 * fails is handed to it again (the same messages, after the retry delays),
 * and nothing later is handed out before it succeeded or was given up
 * (maxDeliver), so a sequence recorded by a batch is one up to which
 * everything was handled in this process.
 */
export interface BatchConsumerOptions extends ConsumerOptions {
  batchSize: number;
}

/** A batch of 1 or more messages, in stream order; it throws to have them all again later. */
export type BatchHandler = (messages: BusMessage[]) => Promise<void>;

/**
 * A handler of a non-durable subscription: its failure is logged, never
 * retried (the message is not kept for it).
 */
export type SubscriptionHandler = (message: BusMessage) => void | Promise<void>;

export interface Consumer {
  stop(): Promise<void>;
}

/** One message of `publishInOrder`. */
export interface OutgoingMessage {
  subject: string;
  data: Uint8Array;
  msgId: string;
  /** W3C traceparent of the work that made the event: consumers continue its trace. */
  traceparent?: string;
  /** W3C tracestate beside it, passed on unchanged. */
  tracestate?: string;
}

/** W3C Trace Context of a message: its two headers (tracestate only ever beside a traceparent). */
export interface TraceHeaders {
  traceparent?: string;
  tracestate?: string;
}

/** The headers present, as fields (none for none): what a delivered message carries. */
export function traceFields(trace: TraceHeaders | undefined): TraceHeaders {
  if (!trace?.traceparent) return {};
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

/** What `publishInOrder` got done: the first `published` messages were stored (acknowledged). */
export interface PublishedInOrder {
  published: number;
  /** Why the next one was not; absent when all were, or when the next may simply be sent again at once. */
  error?: unknown;
}

/** What a publisher (the outbox relay) hears of `publishAll` as it goes. */
export interface PublishHooks {
  /**
   * Asked before each send the bus starts (one message, or several sent
   * together); false stops the call there, nothing more is sent. The relay
   * renews its lease here.
   */
  beforeSend(): Promise<boolean>;
  /** The message is stored (every consumer will have it): mark it sent. */
  published(msgId: string): void;
  /**
   * The bus took the message for some consumers only, or none yet
   * (PublishDeferredError): publish it again, in order, at or after `retryAt`
   * (Date.now() time; undefined: the bus cannot tell). The call goes on with
   * the messages behind it.
   */
  deferred(msgId: string, retryAt: number | undefined, reason: PublishDeferredError): void;
}

export interface EventBus {
  readonly kind: "nats" | "in-process";
  /**
   * Resolves once the broker has stored the message (JetStream ack). May
   * reject with a PublishDeferredError: some consumers have it, the others
   * must get it later (the in-process bus).
   */
  publish(subject: string, data: Uint8Array, msgId: string, trace?: TraceHeaders): Promise<void>;
  /**
   * Optional: sends all the messages at once, in this order, and waits for
   * their acknowledgements together. The broker stores a message only if it
   * stored the one before it in the call (or had it already), so whatever
   * fails, the stored ones are a prefix of the call, in order, and nothing
   * after a failed message is stored before it.
   */
  publishInOrder?(messages: readonly OutgoingMessage[]): Promise<PublishedInOrder>;
  /**
   * Optional: publishes messages that must reach each consumer in this order,
   * as this bus does it best, telling `hooks` what became of each. Resolves
   * with the error that ended the call early, if one did: the messages
   * neither published nor deferred by then were not sent (or not stored) and
   * go again later, in order. Without it, publishAll() sends one by one.
   */
  publishAll?(messages: readonly OutgoingMessage[], hooks: PublishHooks): Promise<{ error?: unknown }>;
  consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer>;
  /**
   * Durable, in batches (BatchConsumerOptions). Optional: a bus without it
   * (the in-process bus, whose publish hands each message over as it comes)
   * is consumed one message at a time; use `consumeInBatches`.
   */
  consumeBatches?(options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer>;
  /**
   * Non-durable, every process: each subscriber of every process gets each
   * message published on `<prefix>.<subject>` (wildcards allowed) from now on,
   * while connected; nothing is kept for it, nothing redelivered (a NATS core
   * subscription, which JetStream-published messages reach as well). For
   * caches that must hear of changes: they drop what they hold when
   * `connected` goes false, since messages sent meanwhile are lost to them.
   */
  subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer>;
  /**
   * An announcement to every listener of `topic` in every process (NATS
   * core on `<prefix>-announce.<topic>`: outside the stream's subjects, never
   * stored): for caches that must hear of a change before the caller answers.
   * Resolves once the broker has it (in process: once the listeners ran).
   */
  announce(topic: string, data: Uint8Array): Promise<void>;
  /** Hears the announcements of `topic` from now on, while connected (as subscribe). */
  listen(topic: string, handler: SubscriptionHandler): Promise<Consumer>;
  /**
   * Optional (JetStream): durable consumer `durable`'s ack floor, a stream
   * sequence at or below which every message of the consumer was
   * acknowledged (or given up); 0 when nothing is known to be, undefined when
   * the consumer does not exist (yet, or lost). A consumer that acks only
   * after recording what a message carries has recorded everything up to it.
   * The in-process bus has none: it hands messages over one at a time, in
   * order, in one process.
   */
  ackFloor?(durable: string): Promise<number | undefined>;
  /** True while the broker connection is up (always, in process). */
  readonly connected: boolean;
  /** Calls `listener` on every change of `connected`; returns the way to stop listening. */
  onConnectionChange(listener: (connected: boolean) => void): () => void;
  /** Throws when the broker is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The bus's own way of publishing messages in order (EventBus.publishAll), or
 * one by one: each waits for the one before it, a deferred one does not stop
 * the ones behind it, any other failure ends the call.
 */
export function publishAll(
  bus: EventBus,
  messages: readonly OutgoingMessage[],
  hooks: PublishHooks,
): Promise<{ error?: unknown }> {
  return bus.publishAll ? bus.publishAll(messages, hooks) : publishOneByOne(bus, messages, hooks);
}

export async function publishOneByOne(
  bus: EventBus,
  messages: readonly OutgoingMessage[],
  hooks: PublishHooks,
): Promise<{ error?: unknown }> {
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

/** The bus's batch consumer, or its `consume` with batches of one message. */
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

/** NATS subject matching with `*` and `>` wildcards. */
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
 * A publish the bus took for some consumers only, or for none yet: the
 * publisher keeps the message and publishes it again later (the ones behind
 * it may go meanwhile); consumers that have it already skip it.
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
