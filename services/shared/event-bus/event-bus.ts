// The event bus the services publish to and consume from: NATS JetStream in
// production, an in-process bus in the embedded start. Both deliver at least
// once; a handler that throws gets the message again later.

export interface BusMessage {
  subject: string;
  data: Uint8Array;
  /** The event id (Nats-Msg-Id): the same on every redelivery. */
  msgId: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** The message's sequence in the stream (JetStream only). */
  streamSequence?: number;
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
}

/** What `publishInOrder` got done: the first `published` messages were stored (acknowledged). */
export interface PublishedInOrder {
  published: number;
  /** Why the next one was not; absent when all were, or when the next may simply be sent again at once. */
  error?: unknown;
}

export interface EventBus {
  readonly kind: "nats" | "in-process";
  /** Resolves once the broker has stored the message (JetStream ack). */
  publish(subject: string, data: Uint8Array, msgId: string): Promise<void>;
  /**
   * Optional: sends all the messages at once, in this order, and waits for
   * their acknowledgements together. The broker stores a message only if it
   * stored the one before it in the call (or had it already), so whatever
   * fails, the stored ones are a prefix of the call, in order, and nothing
   * after a failed message is stored before it.
   */
  publishInOrder?(messages: readonly OutgoingMessage[]): Promise<PublishedInOrder>;
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
  /** True while the broker connection is up (always, in process). */
  readonly connected: boolean;
  /** Calls `listener` on every change of `connected`; returns the way to stop listening. */
  onConnectionChange(listener: (connected: boolean) => void): () => void;
  /** Throws when the broker is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The bus's batch consumer, or its `consume` with batches of one message. */
export function consumeInBatches(bus: EventBus, options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer> {
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

/** The in-process bus has no consumer for a subject: the event must wait (the outbox keeps it). */
export class NoConsumerError extends Error {
  constructor(subject: string) {
    super(`no consumer for ${subject} yet`);
    this.name = "NoConsumerError";
  }
}
