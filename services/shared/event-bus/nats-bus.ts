// NATS JetStream. One stream holds every subject under the prefix; the
// stream's duplicate window drops a message whose Nats-Msg-Id it has seen, so
// an outbox row published again after a crash reaches no consumer twice.
import {
  RetentionPolicy,
  StorageType,
  nanos,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from "nats";
import {
  subjectFor,
  type BatchConsumerOptions,
  type BatchHandler,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
  type OutgoingMessage,
  type PublishHooks,
  type PublishedInOrder,
  type SubscriptionHandler,
  type TraceHeaders,
} from "./event-bus.js";
import {
  consumerAckFloor,
  isNotFound,
  runDurable,
  serveBatches,
  serveMessages,
  type DurableContext,
  type Pull,
  type Serve,
} from "./nats-consumer.js";
import { NatsLink, traceHeaders, type NatsLinkOptions } from "./nats-link.js";

export interface NatsBusOptions extends NatsLinkOptions {
  stream: string;
  prefix: string;
  replicas: number;
  duplicateWindowSeconds: number;
  /** The whole of one publish, stream check included (OUTBOX_PUBLISH_TIMEOUT_MS). */
  publishTimeoutMs?: number;
}

const STREAM_MAX_AGE_DAYS = 7;

export class NatsBus extends NatsLink implements EventBus {
  readonly kind = "nats" as const;
  private streamReady: Promise<void> | undefined;
  private readonly consumers = new Set<Consumer>();
  private readonly durables: DurableContext;

  private constructor(
    nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: NatsBusOptions,
  ) {
    super(nc, options.logger);
    this.durables = {
      js,
      jsm,
      stream: options.stream,
      prefix: options.prefix,
      logger: options.logger,
      ensureStream: () => this.ensureStream(),
      streamMayBeGone: () => (this.streamReady = undefined),
    };
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    const nc = await NatsLink.open(options);
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    options.logger.info({ server: nc.getServer() }, "connected to NATS");
    return new NatsBus(nc, nc.jetstream(), jsm, options);
  }

  async subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer> {
    return this.track(await this.coreSubscribe(subjectFor(this.options.prefix, subject), handler));
  }

  async announce(topic: string, data: Uint8Array): Promise<void> {
    this.nc.publish(this.announcementSubject(topic), data);
    await this.nc.flush();
  }

  async listen(topic: string, handler: SubscriptionHandler): Promise<Consumer> {
    return this.track(await this.coreSubscribe(this.announcementSubject(topic), handler));
  }

  private announcementSubject(topic: string): string {
    return `${this.options.prefix}-announce.${topic}`;
  }

  /** A consumer that close() stops. */
  private track(stop: () => unknown): Consumer {
    const consumer: Consumer = {
      stop: async () => {
        await stop();
        this.consumers.delete(consumer);
      },
    };
    this.consumers.add(consumer);
    return consumer;
  }

  /** Creates the stream, or brings its subjects and window up to date. */
  private ensureStream(): Promise<void> {
    this.streamReady ??= (async () => {
      const config = {
        name: this.options.stream,
        subjects: [subjectFor(this.options.prefix, ">")],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        num_replicas: this.options.replicas,
        duplicate_window: nanos(this.options.duplicateWindowSeconds * 1000),
        max_age: nanos(STREAM_MAX_AGE_DAYS * 86_400_000),
      };
      try {
        await this.jsm.streams.info(this.options.stream);
        await this.jsm.streams.update(this.options.stream, config);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.jsm.streams.add(config);
      }
    })().catch((err) => {
      this.streamReady = undefined;
      throw err;
    });
    return this.streamReady;
  }

  /** `trace`: sent as headers of those names. `afterMsgId`: stored only if the stream's last message is that one. */
  async publish(
    subject: string,
    data: Uint8Array,
    msgId: string,
    trace?: TraceHeaders,
    afterMsgId?: string,
  ): Promise<void> {
    // The outbox relay starts a publish only while its lease outlasts this timeout, stream check included.
    const timeoutMs = this.options.publishTimeoutMs ?? 3000;
    const deadline = performance.now() + timeoutMs;
    await this.ensureStream();
    const left = Math.floor(deadline - performance.now());
    if (left <= 0) throw new Error(`publish not sent: the stream took more than ${timeoutMs} ms to answer`);
    try {
      await this.js.publish(subject, data, {
        msgID: msgId,
        ...(trace?.traceparent ? { headers: traceHeaders(trace) } : {}),
        expect: { streamName: this.options.stream, ...(afterMsgId === undefined ? {} : { lastMsgID: afterMsgId }) },
        timeout: left,
      });
    } catch (err) {
      // The stream may be gone (deleted, storage lost): make sure of it again next time.
      this.streamReady = undefined;
      throw err;
    }
  }

  /**
   * All at once on the one connection, each message after the first with
   * Nats-Expected-Last-Msg-Id = the one before it. A "wrong last msg ID" after an
   * acknowledged message is no failure (another publisher's message, or a duplicate).
   */
  async publishInOrder(messages: readonly OutgoingMessage[]): Promise<PublishedInOrder> {
    if (messages.length === 0) return { published: 0 };
    try {
      await this.ensureStream();
    } catch (err) {
      return { published: 0, error: err };
    }
    // Sent in this order: each awaits the same stream check, then writes its request before its next await.
    const acks = messages.map((m, i) =>
      this.publish(m.subject, m.data, m.msgId, m, i > 0 ? messages[i - 1]!.msgId : undefined),
    );
    const settled = await Promise.allSettled(acks);
    const failed = settled.findIndex((s) => s.status === "rejected");
    if (failed === -1) return { published: messages.length };
    const reason = (settled[failed] as PromiseRejectedResult).reason;
    if (failed > 0 && isWrongLastMsgId(reason)) return { published: failed };
    return { published: failed, error: reason };
  }

  /** publishInOrder, going on from a broken chain; the first message not acknowledged ends the call. */
  async publishAll(messages: readonly OutgoingMessage[], hooks: PublishHooks): Promise<{ error?: unknown }> {
    let from = 0;
    while (from < messages.length) {
      // One check covers the whole send: the messages start together, each within the publish timeout.
      if (!(await hooks.beforeSend())) return {};
      const window = messages.slice(from);
      const result = await this.publishInOrder(window);
      for (const m of window.slice(0, result.published)) hooks.published(m.msgId);
      from += result.published;
      if (from < messages.length && (result.error !== undefined || result.published === 0)) {
        return { error: result.error ?? new Error("publish: nothing acknowledged") };
      }
    }
    return {};
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    // Few in hand (each one's ack_wait runs from its delivery); 4 so the next needs no new request.
    return this.durable(options, { maxAckPending: options.maxAckPending, maxMessages: 4 }, serveMessages(handler));
  }

  async consumeBatches(options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer> {
    const batchSize = Math.max(1, Math.floor(options.batchSize));
    return this.durable(options, { maxAckPending: batchSize, maxMessages: batchSize }, serveBatches(handler));
  }

  private durable(options: ConsumerOptions, size: Pick<Pull, "maxAckPending" | "maxMessages">, serve: Serve): Consumer {
    const running = runDurable(this.durables, options, size, serve);
    return this.track(() => running.stop());
  }

  ackFloor(durable: string): Promise<number | undefined> {
    return consumerAckFloor(this.jsm, this.options.stream, durable);
  }

  async ping(): Promise<void> {
    if (this.nc.isClosed()) throw new Error("nats connection closed");
    await this.nc.flush();
    await this.jsm.getAccountInfo();
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.stop()));
    await this.nc.drain().catch(() => this.nc.close());
  }
}

/**
 * JetStream refused a message whose Nats-Expected-Last-Msg-Id was not the stream's last (JSStreamWrongLastMsgIDErr).
 */
function isWrongLastMsgId(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: unknown } | undefined;
  return e?.api_error?.err_code === 10070 || /wrong last msg id/i.test(String(e?.message ?? ""));
}
