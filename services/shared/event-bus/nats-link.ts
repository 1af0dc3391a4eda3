// The NATS connection under the bus (nats-bus.ts extends it): connecting
// (waiting for the server), whether it is up, and NATS core subscriptions (no
// stream: a message reaches whoever is subscribed when it is sent, once).
import { connect, headers, type MsgHdrs, type NatsConnection } from "nats";
import type { Logger } from "../logger.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import { traceFields, type SubscriptionHandler, type TraceHeaders } from "./event-bus.js";

export interface NatsLinkOptions {
  servers: string;
  name: string;
  logger: Logger;
}

export class NatsLink {
  private readonly connectionListeners = new Set<(connected: boolean) => void>();
  private up = true;

  protected constructor(
    protected readonly nc: NatsConnection,
    private readonly logger: Logger,
  ) {
    void this.watchStatus();
    void nc.closed().then(() => this.setConnected(false));
  }

  /** Connects, waiting for the first connection if the server is not up yet. */
  protected static async open(options: NatsLinkOptions): Promise<NatsConnection> {
    options.logger.info({ servers: options.servers }, "connecting to NATS (waits until it answers)");
    return connect({
      servers: options.servers.split(",").map((s) => s.trim()),
      name: options.name,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // A silent connection is noticed within about 20 s, not 4 minutes: caches fed by subscribe() rely on it.
      pingInterval: 10_000,
      maxPingOut: 2,
      // Otherwise every request (each JetStream publish) makes an Error up front, for a timeout's stack.
      noAsyncTraces: true,
    });
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
  protected async coreSubscribe(subject: string, handler: SubscriptionHandler): Promise<() => void> {
    const log = this.logger.child({ subscription: subject });
    const sub = this.nc.subscribe(subject, {
      callback: (err, m) => {
        if (err) return log.warn({ err }, "subscription error");
        const message = {
          subject: m.subject,
          data: m.data,
          msgId: m.headers?.get("Nats-Msg-Id") ?? "",
          deliveryCount: 1,
          ...traceOf(m.headers),
        };
        // The executor runs the handler at once; a throw or a rejection is logged alike.
        new Promise<void>((resolve) => resolve(handler(message))).catch((e: unknown) =>
          log.warn({ err: e, subject: m.subject }, "subscriber failed; not redelivered"),
        );
      },
    });
    // The server has the subscription once this round trip is done.
    await this.nc.flush();
    return () => {
      if (!this.nc.isClosed()) sub.unsubscribe();
    };
  }
}

export function traceOf(h: MsgHdrs | undefined): TraceHeaders {
  return traceFields({ traceparent: h?.get(TRACEPARENT_HEADER), tracestate: h?.get(TRACESTATE_HEADER) });
}

export function traceHeaders(trace: TraceHeaders): MsgHdrs {
  const h = headers();
  h.set(TRACEPARENT_HEADER, trace.traceparent!);
  if (trace.tracestate) h.set(TRACESTATE_HEADER, trace.tracestate);
  return h;
}
