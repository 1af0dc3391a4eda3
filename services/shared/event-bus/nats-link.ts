// The NATS connection under the bus (nats-bus.ts): connecting (waiting for the
// server), whether it is up, and NATS core subscriptions (subscribe, listen:
// no stream, a message reaches whoever is subscribed when it is sent, once).
import { connect, type NatsConnection } from "nats";
import type { Logger } from "../logger.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import { traceFields, type SubscriptionHandler } from "./event-bus.js";

export interface NatsLinkOptions {
  servers: string;
  /** Connection name shown by the server. */
  name: string;
  logger: Logger;
}

export class NatsLink {
  private readonly connectionListeners = new Set<(connected: boolean) => void>();
  private up = true;

  private constructor(
    readonly nc: NatsConnection,
    private readonly logger: Logger,
  ) {}

  /** Connects, waiting for the first connection if the server is not up yet. */
  static async connect(options: NatsLinkOptions): Promise<NatsLink> {
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
      // Every request (each JetStream publish and its acknowledgement) otherwise makes an Error up
      // front to hold where it started, for a timeout's message: CPU on every publish, for a stack
      // only a timeout would show. A timeout still says what timed out.
      noAsyncTraces: true,
    });
    const link = new NatsLink(nc, options.logger);
    void link.watchStatus();
    void nc.closed().then(() => link.setConnected(false));
    return link;
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === "disconnect" || status.type === "reconnect" || status.type === "error") {
        this.logger.warn({ nats: status.type, data: String(status.data) }, "nats connection");
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
        this.logger.error({ err }, "connection listener failed");
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

  /** A NATS core subscription, there once the server has it; the function it resolves to ends it. */
  async subscribe(subject: string, handler: SubscriptionHandler): Promise<() => void> {
    const log = this.logger.child({ subscription: subject });
    const sub = this.nc.subscribe(subject, {
      callback: (err, m) => {
        if (err) return log.warn({ err }, "subscription error");
        const trace = traceFields({
          traceparent: m.headers?.get(TRACEPARENT_HEADER),
          tracestate: m.headers?.get(TRACESTATE_HEADER),
        });
        const message = {
          subject: m.subject,
          data: m.data,
          msgId: m.headers?.get("Nats-Msg-Id") ?? "",
          deliveryCount: 1,
          ...trace,
        };
        try {
          const done = handler(message);
          if (done)
            done.catch((e: unknown) => log.warn({ err: e, subject: m.subject }, "subscriber failed; not redelivered"));
        } catch (e) {
          log.warn({ err: e, subject: m.subject }, "subscriber failed; not redelivered");
        }
      },
    });
    // The server has the subscription once this round trip is done.
    await this.nc.flush();
    return () => {
      if (!this.nc.isClosed()) sub.unsubscribe();
    };
  }
}
