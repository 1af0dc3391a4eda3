// NATS JetStream. One stream holds every subject under the prefix; the
// stream's duplicate window drops a message whose Nats-Msg-Id it has seen, so
// an outbox row published again after a crash reaches no consumer twice.
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  connect,
  nanos,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
} from "nats";
import type { Logger } from "../logger.js";
import {
  subjectFor,
  type BatchConsumerOptions,
  type BatchHandler,
  type BusMessage,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
  type OutgoingMessage,
  type PublishedInOrder,
  type SubscriptionHandler,
} from "./event-bus.js";

export interface NatsBusOptions {
  servers: string;
  stream: string;
  prefix: string;
  replicas: number;
  duplicateWindowSeconds: number;
  /** Connection name shown by the server. */
  name: string;
  logger: Logger;
  /** The whole of one publish, making sure of the stream included (OUTBOX_PUBLISH_TIMEOUT_MS). */
  publishTimeoutMs?: number;
}

const STREAM_MAX_AGE_DAYS = 7;

export class NatsBus implements EventBus {
  readonly kind = "nats" as const;
  private streamReady: Promise<void> | undefined;
  private readonly consumers = new Set<Consumer>();
  private readonly connectionListeners = new Set<(connected: boolean) => void>();
  private up = true;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: NatsBusOptions,
  ) {}

  /** Connects, waiting for the first connection if the server is not up yet. */
  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    options.logger.info({ servers: options.servers }, "connecting to NATS (waits until it answers)");
    const nc = await connect({
      servers: options.servers.split(",").map((s) => s.trim()),
      name: options.name,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // A connection that went silent (no RST: a partition, a frozen server) is
      // noticed within about 20 s rather than the client's default 4 minutes;
      // caches fed by subscribe() stop trusting themselves from then on.
      pingInterval: 10_000,
      maxPingOut: 2,
    });
    const jsm = await nc.jetstreamManager({ checkAPI: false });
    options.logger.info({ server: nc.getServer() }, "connected to NATS");
    const bus = new NatsBus(nc, nc.jetstream(), jsm, options);
    void bus.watchStatus();
    void nc.closed().then(() => bus.setConnected(false));
    return bus;
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === "disconnect" || status.type === "reconnect" || status.type === "error") {
        this.options.logger.warn({ nats: status.type, data: String(status.data) }, "nats connection");
      }
      // The client resubscribes before it reports the reconnection.
      if (status.type === "disconnect") this.setConnected(false);
      else if (status.type === "reconnect") this.setConnected(true);
    }
  }

  private setConnected(up: boolean): void {
    if (this.up === up) return;
    this.up = up;
    for (const listener of this.connectionListeners) {
      try {
        listener(up);
      } catch (err) {
        this.options.logger.error({ err }, "connection listener failed");
      }
    }
  }

  get connected(): boolean {
    return this.up && !this.nc.isClosed();
  }

  onConnectionChange(listener: (connected: boolean) => void): () => void {
    this.connectionListeners.add(listener);
    return () => void this.connectionListeners.delete(listener);
  }

  async subscribe(subject: string, handler: SubscriptionHandler): Promise<Consumer> {
    const log = this.options.logger.child({ subscription: subject });
    const sub = this.nc.subscribe(subjectFor(this.options.prefix, subject), {
      callback: (err, m) => {
        if (err) return log.warn({ err }, "subscription error");
        const message = { subject: m.subject, data: m.data, msgId: m.headers?.get("Nats-Msg-Id") ?? "", deliveryCount: 1 };
        try {
          const done = handler(message);
          if (done) done.catch((e: unknown) => log.warn({ err: e, subject: m.subject }, "subscriber failed; not redelivered"));
        } catch (e) {
          log.warn({ err: e, subject: m.subject }, "subscriber failed; not redelivered");
        }
      },
    });
    // The server has the subscription once this round trip is done.
    await this.nc.flush();
    const consumer: Consumer = {
      stop: async () => {
        if (!this.nc.isClosed()) sub.unsubscribe();
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

  /** `afterMsgId`: stored only if the stream's last stored message is that one (publishInOrder). */
  async publish(subject: string, data: Uint8Array, msgId: string, afterMsgId?: string): Promise<void> {
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
    const acks = messages.map((m, i) => this.publish(m.subject, m.data, m.msgId, i > 0 ? messages[i - 1]!.msgId : undefined));
    const settled = await Promise.allSettled(acks);
    const failed = settled.findIndex((s) => s.status === "rejected");
    if (failed === -1) return { published: messages.length };
    const reason = (settled[failed] as PromiseRejectedResult).reason;
    if (failed > 0 && isWrongLastMsgId(reason)) return { published: failed };
    return { published: failed, error: reason };
  }

  /**
   * Makes sure of the stream and the durable consumer (created, or brought up
   * to date), and opens its pull: `maxMessages` in hand at a time.
   */
  private async openConsumer(
    options: ConsumerOptions,
    log: Logger,
    settings: { ackWaitMs: number; maxDeliver: number; maxAckPending: number | undefined; maxMessages: number },
  ): Promise<ConsumerMessages> {
    await this.ensureStream();
    const config = {
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(settings.ackWaitMs),
      max_deliver: settings.maxDeliver,
      filter_subject: subjectFor(this.options.prefix, options.subject),
      ...(settings.maxAckPending ? { max_ack_pending: settings.maxAckPending } : {}),
    };
    let existing: ConsumerInfo | undefined;
    try {
      existing = await this.jsm.consumers.info(this.options.stream, options.durable);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (existing) {
      // Where it starts cannot change on a consumer that exists (nor need to: it has its position).
      await this.jsm.consumers.update(this.options.stream, options.durable, config);
    } else {
      // Created, or lost and created again: right after what the owner recorded as handled,
      // never DeliverPolicy.All, which would hand out the whole retained stream again.
      let after = await options.startAfterSequence?.();
      if (after !== undefined) {
        // A position past the stream's end belongs to a stream that is gone (this one was
        // created since): all of this one is new.
        const { state } = await this.jsm.streams.info(this.options.stream);
        if (after > state.last_seq) {
          log.warn({ recorded: after, lastSeq: state.last_seq }, "recorded position is past the stream's end (the stream was recreated); starting from its beginning");
          after = undefined;
        }
      }
      const start =
        after === undefined ? { deliver_policy: DeliverPolicy.All } : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 };
      log.info({ ...start }, "creating the durable consumer");
      await this.jsm.consumers.add(this.options.stream, { durable_name: options.durable, ...config, ...start });
    }
    const consumer = await this.js.consumers.get(this.options.stream, options.durable);
    // A deleted stream or consumer ends the iterator: the caller rebuilds.
    return consumer.consume({ max_messages: settings.maxMessages, abort_on_missing_resource: true });
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    const log = this.options.logger.child({ consumer: options.durable });
    const ackWaitMs = options.ackWaitMs ?? 30_000;
    const maxDeliver = options.maxDeliver ?? 30;
    const retryDelay = retryDelayOf(options);
    const run = async () => {
      while (!stopped) {
        try {
          // Few messages in hand at a time: each one's ack_wait runs from its delivery, and
          // handlers work one by one (the server hands out no more than max_ack_pending; the
          // pull stays open for 4 so the next one needs no new request).
          messages = await this.openConsumer(options, log, { ackWaitMs, maxDeliver, maxAckPending: options.maxAckPending, maxMessages: 4 });
          if (stopped) {
            messages.stop();
            break;
          }
          for await (const m of messages) {
            // The handler may take longer than ack_wait (a slow database): tell the broker it is in hand.
            const keepAlive = setInterval(() => m.working(), Math.max(100, Math.floor(ackWaitMs / 3)));
            try {
              await handler(busMessage(m));
              m.ack();
            } catch (err) {
              if (m.info.deliveryCount >= maxDeliver) {
                log.error({ err, subject: m.subject, seq: m.seq, deliveryCount: m.info.deliveryCount }, "handler failed on the last delivery; message given up");
                m.term();
              } else {
                const delay = retryDelay(m.info.deliveryCount);
                log.warn({ err, subject: m.subject, deliveryCount: m.info.deliveryCount, retryInMs: delay }, "handler failed; redelivering later");
                m.nak(delay);
              }
            } finally {
              clearInterval(keepAlive);
            }
            if (stopped) break;
          }
          this.streamReady = undefined; // the iterator ended: stream or consumer may be gone
        } catch (err) {
          if (stopped) break;
          log.warn({ err }, "consumer interrupted; retrying");
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    };
    const loop = run();
    const consumer: Consumer = {
      stop: async () => {
        stopped = true;
        messages?.stop();
        await loop;
        this.consumers.delete(consumer);
      },
    };
    this.consumers.add(consumer);
    return consumer;
  }

  /**
   * Batches: the pull keeps up to batchSize messages coming (max_ack_pending =
   * batchSize); a pump moves them into a queue as they arrive, and the
   * handler takes everything queued (up to batchSize) each time it is free.
   * So a lone message goes at once, alone, and messages that arrive while a
   * batch is being handled make the next batch. A failed batch is retried
   * here, the same messages in hand (working() keeps their ack_wait from
   * running out), so nothing later overtakes it; after maxDeliver attempts
   * in all it is given up (terminated, logged). Stopped while retrying: the
   * batch is handed back to the broker (nak) at once.
   */
  async consumeBatches(options: BatchConsumerOptions, handler: BatchHandler): Promise<Consumer> {
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let interrupt: (() => void) | undefined;
    const log = this.options.logger.child({ consumer: options.durable });
    const batchSize = Math.max(1, Math.floor(options.batchSize));
    const ackWaitMs = options.ackWaitMs ?? 30_000;
    const maxDeliver = options.maxDeliver ?? 30;
    const retryDelay = retryDelayOf(options);
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          interrupt = undefined;
          resolve();
        }
        interrupt = done;
      });

    // `waiting`: the messages queued behind the batch. They are in hand too: while the
    // batch is handled (or retried), their ack_wait must not run out either, or the
    // broker would hand them out again to a consumer that still has them.
    const handle = async (batch: JsMsg[], waiting: readonly JsMsg[]) => {
      const keepAlive = setInterval(() => {
        for (const m of batch) m.working();
        for (const m of waiting) m.working();
      }, Math.max(100, Math.floor(ackWaitMs / 3)));
      try {
        for (let attempt = 1; ; attempt++) {
          // This attempt's delivery count: the broker's, plus the retries made here.
          const deliveryCount = Math.max(...batch.map((m) => m.info.deliveryCount)) + attempt - 1;
          try {
            await handler(batch.map((m) => ({ ...busMessage(m), deliveryCount: m.info.deliveryCount + attempt - 1 })));
            for (const m of batch) m.ack();
            return;
          } catch (err) {
            const seqs = { firstSeq: batch[0]!.seq, lastSeq: batch[batch.length - 1]!.seq, messages: batch.length };
            if (deliveryCount >= maxDeliver) {
              log.error({ err, ...seqs, deliveryCount }, "handler failed on the last delivery; batch given up");
              for (const m of batch) m.term();
              return;
            }
            if (stopped) {
              for (const m of batch) m.nak();
              return;
            }
            const delay = retryDelay(deliveryCount);
            log.warn({ err, ...seqs, deliveryCount, retryInMs: delay }, "handler failed; the batch is retried");
            await pause(delay);
            if (stopped) {
              for (const m of batch) m.nak();
              return;
            }
          }
        }
      } finally {
        clearInterval(keepAlive);
      }
    };

    const run = async () => {
      while (!stopped) {
        try {
          messages = await this.openConsumer(options, log, { ackWaitMs, maxDeliver, maxAckPending: batchSize, maxMessages: batchSize });
          if (stopped) {
            messages.stop();
            break;
          }
          const queue: JsMsg[] = [];
          let ended = false;
          let arrived: (() => void) | undefined;
          const source = messages;
          const pump = (async () => {
            try {
              for await (const m of source) {
                queue.push(m);
                arrived?.();
              }
            } finally {
              ended = true;
              arrived?.();
            }
          })();
          while (!stopped) {
            if (queue.length === 0) {
              if (ended) break;
              await new Promise<void>((resolve) => (arrived = resolve));
              arrived = undefined;
              continue;
            }
            await handle(queue.splice(0, batchSize), queue);
          }
          // Stopped: what is still queued goes back to the broker now rather than after ack_wait.
          for (const m of queue.splice(0)) m.nak();
          await pump;
          this.streamReady = undefined; // the iterator ended: stream or consumer may be gone
        } catch (err) {
          if (stopped) break;
          log.warn({ err }, "consumer interrupted; retrying");
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    };
    const loop = run();
    const consumer: Consumer = {
      stop: async () => {
        stopped = true;
        messages?.stop();
        interrupt?.();
        await loop;
        this.consumers.delete(consumer);
      },
    };
    this.consumers.add(consumer);
    return consumer;
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

function busMessage(m: JsMsg): BusMessage {
  return {
    subject: m.subject,
    data: m.data,
    msgId: m.headers?.get("Nats-Msg-Id") || `${m.info.stream}:${m.seq}`,
    deliveryCount: m.info.deliveryCount,
    streamSequence: m.seq,
  };
}

/** The n-th failure of one message (or batch) waits retryDelayMs × 2^(n-1), capped. */
function retryDelayOf(options: ConsumerOptions): (deliveryCount: number) => number {
  const retryDelayMs = options.retryDelayMs ?? 1000;
  const maxRetryDelayMs = options.maxRetryDelayMs ?? 60_000;
  return (deliveryCount) => Math.min(maxRetryDelayMs, retryDelayMs * 2 ** Math.min(deliveryCount - 1, 30));
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { code?: number; err_code?: number } };
  return e?.api_error?.code === 404 || e?.code === "404";
}

/** JetStream refused a message whose Nats-Expected-Last-Msg-Id was not the stream's last (JSStreamWrongLastMsgIDErr). */
function isWrongLastMsgId(err: unknown): boolean {
  const e = err as { api_error?: { err_code?: number }; message?: unknown } | undefined;
  return e?.api_error?.err_code === 10070 || /wrong last msg id/i.test(String(e?.message ?? ""));
}
