// NATS JetStream. One stream holds every subject under the prefix; the
// stream's duplicate window drops a message whose Nats-Msg-Id it has seen, so
// an outbox row published again after a crash reaches no consumer twice.
import {
  RetentionPolicy,
  StorageType,
  headers,
  nanos,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from "nats";
import type { Logger } from "../logger.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
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
  type PullSettings,
  type Serve,
} from "./nats-consumer.js";
import { NatsLink, type NatsLinkOptions } from "./nats-link.js";

export interface NatsBusOptions extends NatsLinkOptions {
  stream: string;
  prefix: string;
  replicas: number;
  duplicateWindowSeconds: number;
  /** The whole of one publish, making sure of the stream included (OUTBOX_PUBLISH_TIMEOUT_MS). */
  publishTimeoutMs?: number;
}

const STREAM_MAX_AGE_DAYS = 7;

export class NatsBus implements EventBus {
  readonly kind = "nats" as const;
  private streamReady: Promise<void> | undefined;
  private readonly consumers = new Set<Consumer>();

  private constructor(
    private readonly link: NatsLink,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: NatsBusOptions,
  ) {}

  /** Connects, waiting for the first connection if the server is not up yet. */
  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    const link = await NatsLink.connect(options);
    const jsm = await link.nc.jetstreamManager({ checkAPI: false });
    options.logger.info({ server: link.nc.getServer() }, "connected to NATS");
    return new NatsBus(link, link.nc.jetstream(), jsm, options);
  }

  private get nc(): NatsConnection {
    return this.link.nc;
  }

  get connected(): boolean {
    return this.link.connected;
  }

  onConnectionChange(listener: (connected: boolean) => void): () => void {
    return this.link.onConnectionChange(listener);
  }

  subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer> {
    return this.coreSubscription(subjectFor(this.options.prefix, subject), handler);
  }

  async announce(topic: string, data: Uint8Array): Promise<void> {
    this.nc.publish(this.announcementSubject(topic), data);
    await this.nc.flush();
  }

  listen(topic: string, handler: SubscriptionHandler): Promise<Consumer> {
    return this.coreSubscription(this.announcementSubject(topic), handler);
  }

  private announcementSubject(topic: string): string {
    return `${this.options.prefix}-announce.${topic}`;
  }

  private async coreSubscription(subject: string, handler: SubscriptionHandler): Promise<Consumer> {
    const unsubscribe = await this.link.subscribe(subject, handler);
    const consumer: Consumer = {
      stop: async () => {
        unsubscribe();
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

  /**
   * `trace`: sent as the message headers of those names (W3C Trace Context
   * over a message bus). `afterMsgId`: stored only if the stream's last stored
   * message is that one (publishInOrder).
   */
  async publish(
    subject: string,
    data: Uint8Array,
    msgId: string,
    trace?: TraceHeaders,
    afterMsgId?: string,
  ): Promise<void> {
    // The outbox relay starts a publish only while its lease outlasts this
    // timeout: the message must not leave after it, stream check included.
    const timeoutMs = this.options.publishTimeoutMs ?? 3000;
    const deadline = performance.now() + timeoutMs;
    await this.ensureStream();
    const left = Math.floor(deadline - performance.now());
    if (left <= 0) throw new Error(`publish not sent: the stream took more than ${timeoutMs} ms to answer`);
    try {
      await this.js.publish(subject, data, {
        msgID: msgId,
        ...(trace?.traceparent ? { headers: traceHeaders(trace.traceparent, trace.tracestate) } : {}),
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
   * All at once on the one connection (the server takes a connection's
   * messages in the order sent), acknowledgements awaited together. Each
   * message after the first carries Nats-Expected-Last-Msg-Id = the one before
   * it: the stream stores it only if its last stored message is that one. So
   * if message k is not stored (refused, lost with the connection), every
   * message after it is refused too, and the stream never holds k+1 before k.
   * The first failed acknowledgement ends what counts as published: the
   * messages from there on are sent again later (one whose acknowledgement
   * timed out but that was stored after all is then dropped as a duplicate).
   * A refusal for "wrong last msg ID" after an acknowledged message is not a
   * failure: another publisher's message came in between, or the one before
   * was a duplicate (not stored again, so not the stream's last): the caller
   * may send again at once from there (its first message carries no
   * expectation, so it always gets through or fails for a real reason).
   */
  async publishInOrder(messages: readonly OutgoingMessage[]): Promise<PublishedInOrder> {
    if (messages.length === 0) return { published: 0 };
    try {
      await this.ensureStream();
    } catch (err) {
      return { published: 0, error: err };
    }
    // Sent in this order: each publish awaits the same settled stream check
    // (continuations run in the order they were queued), then writes its
    // request before its next await. Each has the whole publish timeout.
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

  /**
   * Publishes a batch in order, as fast as the stream allows: all of it at
   * once (publishInOrder), each message stored only after the one before it.
   * The first message not acknowledged ends the call; it and everything
   * behind it are published again later, in order (one whose acknowledgement
   * timed out but that was stored after all is dropped then as a duplicate).
   * So the stream holds the events in the order given, failures included.
   * Another publisher's message in between, or a duplicate, breaks the chain
   * without anything failing: the call goes on at once from that message.
   */
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
    // Few messages in hand at a time: each one's ack_wait runs from its delivery, and
    // handlers work one by one (the server hands out no more than max_ack_pending; the
    // pull stays open for 4 so the next one needs no new request).
    const settings = this.pullSettings(options, options.maxAckPending, 4);
    return this.durable(options, settings, serveMessages(options, settings, handler, this.consumerLog(options)));
  }

  /** Batches (BatchConsumerOptions): up to batchSize in hand, handled together (serveBatches). */
  async consumeBatches(options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer> {
    const batchSize = Math.max(1, Math.floor(options.batchSize));
    const settings = this.pullSettings(options, batchSize, batchSize);
    return this.durable(
      options,
      settings,
      serveBatches(options, settings, batchSize, handler, this.consumerLog(options)),
    );
  }

  private pullSettings(options: ConsumerOptions, maxAckPending: number | undefined, maxMessages: number): PullSettings {
    return { ackWaitMs: options.ackWaitMs ?? 30_000, maxDeliver: options.maxDeliver ?? 30, maxAckPending, maxMessages };
  }

  private consumerLog(options: ConsumerOptions): Logger {
    return this.options.logger.child({ consumer: options.durable });
  }

  private durable(options: ConsumerOptions, settings: PullSettings, serve: Serve): Consumer {
    const ctx: DurableContext = {
      js: this.js,
      jsm: this.jsm,
      stream: this.options.stream,
      prefix: this.options.prefix,
      logger: this.options.logger,
      ensureStream: () => this.ensureStream(),
      streamMayBeGone: () => (this.streamReady = undefined),
    };
    const running = runDurable(ctx, options, settings, serve);
    const consumer: Consumer = {
      stop: async () => {
        await running.stop();
        this.consumers.delete(consumer);
      },
    };
    this.consumers.add(consumer);
    return consumer;
  }

  /** The durable consumer's ack floor (nats-consumer.ts consumerAckFloor). */
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

function traceHeaders(traceparent: string, tracestate: string | undefined) {
  const h = headers();
  h.set(TRACEPARENT_HEADER, traceparent);
  if (tracestate) h.set(TRACESTATE_HEADER, tracestate);
  return h;
}

/** JetStream refused a message whose Nats-Expected-Last-Msg-Id was not the stream's last (JSStreamWrongLastMsgIDErr). */
function isWrongLastMsgId(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: unknown } | undefined;
  return e?.api_error?.err_code === 10070 || /wrong last msg id/i.test(String(e?.message ?? ""));
}
