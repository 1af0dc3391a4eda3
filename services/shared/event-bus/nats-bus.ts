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
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
} from "nats";
import type { Logger } from "../logger.js";
import {
  subjectFor,
  type Consumer,
  type ConsumerOptions,
  type EventBus,
  type MessageHandler,
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

  async publish(subject: string, data: Uint8Array, msgId: string): Promise<void> {
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
        expect: { streamName: this.options.stream },
        timeout: left,
      });
    } catch (err) {
      // The stream may be gone (deleted, storage lost): make sure of it again next time.
      this.streamReady = undefined;
      throw err;
    }
  }

  async consume(options: ConsumerOptions, handler: MessageHandler): Promise<Consumer> {
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    const log = this.options.logger.child({ consumer: options.durable });
    const run = async () => {
      while (!stopped) {
        try {
          await this.ensureStream();
          const config = {
            durable_name: options.durable,
            ack_policy: AckPolicy.Explicit,
            deliver_policy: DeliverPolicy.All,
            ack_wait: nanos(60_000),
            max_deliver: -1,
            filter_subject: subjectFor(this.options.prefix, options.subject),
          };
          try {
            await this.jsm.consumers.info(this.options.stream, options.durable);
            await this.jsm.consumers.update(this.options.stream, options.durable, config);
          } catch (err) {
            if (!isNotFound(err)) throw err;
            await this.jsm.consumers.add(this.options.stream, config);
          }
          const consumer = await this.js.consumers.get(this.options.stream, options.durable);
          // Few messages in hand at a time: each one's ack_wait runs from its delivery, and
          // handlers work one by one. A deleted stream or consumer ends the loop: rebuilt above.
          messages = await consumer.consume({ max_messages: 4, abort_on_missing_resource: true });
          if (stopped) {
            messages.stop();
            break;
          }
          for await (const m of messages) {
            try {
              await handler({
                subject: m.subject,
                data: m.data,
                msgId: m.headers?.get("Nats-Msg-Id") || `${m.info.stream}:${m.seq}`,
                deliveryCount: m.info.deliveryCount,
              });
              m.ack();
            } catch (err) {
              log.warn({ err, subject: m.subject, deliveryCount: m.info.deliveryCount }, "handler failed; redelivering later");
              m.nak(options.retryDelayMs ?? 5000);
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

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { code?: number; err_code?: number } };
  return e?.api_error?.code === 404 || e?.code === "404";
}
