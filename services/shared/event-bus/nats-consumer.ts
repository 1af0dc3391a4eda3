// The NATS bus's durable consumers: one loop (runDurable) that makes sure of
// the stream and the consumer, opens its pull, serves it until it ends (a
// deleted stream or consumer, a lost connection) and opens it again; and the
// two ways of serving a pull, one message at a time or in batches.
import { setTimeout as sleep } from "node:timers/promises";
import {
  AckPolicy,
  DeliverPolicy,
  nanos,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "nats";
import { backoffDelay, type Backoff } from "../loop/backoff.js";
import { PollLoop } from "../loop/poll-loop.js";
import type { Logger } from "../logger.js";
import { consumerPendingSources } from "../metrics/metrics.js";
import { addSource } from "../metrics/scrape-sources.js";
import {
  redeliveryBackoff,
  subjectFor,
  type BatchHandler,
  type BusMessage,
  type Consumer,
  type ConsumerOptions,
  type MessageHandler,
} from "./event-bus.js";
import { traceOf } from "./nats-link.js";

export interface DurableContext {
  js: JetStreamClient;
  jsm: JetStreamManager;
  stream: string;
  prefix: string;
  logger: Logger;
  ensureStream(): Promise<void>;
  /** The pull ended: the stream or the consumer may be gone, make sure of it again. */
  streamMayBeGone(): void;
}

/** How a consumer's pull is served: `maxMessages` in hand at a time. */
export interface Pull {
  log: Logger;
  ackWaitMs: number;
  maxDeliver: number;
  maxAckPending: number | undefined;
  maxMessages: number;
  backoff: Backoff;
}

export type Serve = (messages: ConsumerMessages, stopping: AbortSignal, pull: Pull) => Promise<void>;

/** The one reopen loop of every durable consumer; the returned consumer stops it. */
export function runDurable(
  ctx: DurableContext,
  options: ConsumerOptions,
  size: Pick<Pull, "maxAckPending" | "maxMessages">,
  serve: Serve,
): Consumer {
  const log = ctx.logger.child({ consumer: options.durable });
  const pull: Pull = {
    ...size,
    log,
    ackWaitMs: options.ackWaitMs ?? 30_000,
    maxDeliver: options.maxDeliver ?? 30,
    backoff: redeliveryBackoff(options),
  };
  const stopping = new AbortController();
  let messages: ConsumerMessages | undefined;
  const loop = new PollLoop({
    // A pull that could not be opened, or ended with an error, is opened again after a second.
    backoff: { baseMs: 1000, maxMs: 1000 },
    onError: (err) => log.warn({ err }, "consumer interrupted; retrying"),
    round: async () => {
      messages = await openDurable(ctx, options, pull);
      if (stopping.signal.aborted) messages.stop();
      // The pull ended: the stream or the consumer may be gone.
      else await serve(messages, stopping.signal, pull).then(() => ctx.streamMayBeGone());
      return 0;
    },
  });
  loop.start();
  // eventbus_consumer_pending_messages: what the broker holds for this durable and it has not acked, read when scraped.
  const stopMetric = addSource(consumerPendingSources, async () => {
    const info = await ctx.jsm.consumers.info(ctx.stream, options.durable);
    return [[options.durable, info.num_pending + info.num_ack_pending]];
  });
  return {
    stop: async () => {
      stopMetric();
      stopping.abort();
      const stopped = loop.stop();
      messages?.stop();
      await stopped;
    },
  };
}

/** Makes sure of the stream and the durable consumer (created, or brought up to date), and opens its pull. */
async function openDurable(ctx: DurableContext, options: ConsumerOptions, pull: Pull): Promise<ConsumerMessages> {
  await ctx.ensureStream();
  const config = {
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(pull.ackWaitMs),
    max_deliver: pull.maxDeliver,
    filter_subject: subjectFor(ctx.prefix, options.subject),
    ...(pull.maxAckPending ? { max_ack_pending: pull.maxAckPending } : {}),
  };
  if (await consumerInfo(ctx.jsm, ctx.stream, options.durable)) {
    // Where it starts cannot change on a consumer that exists (nor need to: it has its position).
    await ctx.jsm.consumers.update(ctx.stream, options.durable, config);
  } else {
    // Created, or lost and created again: right after what the owner recorded as handled.
    let after = await options.startAfterSequence?.();
    if (after !== undefined) {
      // A position past the stream's end belongs to a stream that is gone: all of this one is new.
      const { state } = await ctx.jsm.streams.info(ctx.stream);
      if (after > state.last_seq) {
        pull.log.warn(
          { recorded: after, lastSeq: state.last_seq },
          "recorded position is past the stream's end (the stream was recreated); starting from its beginning",
        );
        after = undefined;
      }
    }
    const start =
      after === undefined
        ? { deliver_policy: DeliverPolicy.All }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 };
    pull.log.info({ ...start }, "creating the durable consumer");
    await ctx.jsm.consumers.add(ctx.stream, { durable_name: options.durable, ...config, ...start });
  }
  const consumer = await ctx.js.consumers.get(ctx.stream, options.durable);
  // A deleted stream or consumer ends the iterator: the loop opens it again.
  return consumer.consume({ max_messages: pull.maxMessages, abort_on_missing_resource: true });
}

/** While a handler runs longer than ack_wait (a slow database), the broker is told the messages are in hand. */
function keepWorking(messages: () => Iterable<JsMsg>, ackWaitMs: number): () => void {
  const timer = setInterval(
    () => {
      for (const m of messages()) m.working();
    },
    Math.max(100, Math.floor(ackWaitMs / 3)),
  );
  return () => clearInterval(timer);
}

/** One message at a time: acked when the handler resolves, redelivered later (nak with a delay) when it throws. */
export function serveMessages(handler: MessageHandler): Serve {
  return async (messages, stopping, { log, ackWaitMs, maxDeliver, backoff }) => {
    for await (const m of messages) {
      const done = keepWorking(() => [m], ackWaitMs);
      try {
        await handler(busMessage(m));
        m.ack();
      } catch (err) {
        if (m.info.deliveryCount >= maxDeliver) {
          log.error(
            { err, subject: m.subject, seq: m.seq, deliveryCount: m.info.deliveryCount },
            "handler failed on the last delivery; message given up",
          );
          m.term();
        } else {
          const delay = backoffDelay(m.info.deliveryCount, backoff);
          log.warn(
            { err, subject: m.subject, deliveryCount: m.info.deliveryCount, retryInMs: delay },
            "handler failed; redelivering later",
          );
          m.nak(delay);
        }
      } finally {
        done();
      }
      if (stopping.aborted) break;
    }
  };
}

/**
 * Batches of up to maxMessages: the handler takes everything queued each time
 * it is free. A failed batch is retried here, the same messages in hand, so
 * nothing later overtakes it; stopped while retrying, it is handed back (nak).
 */
export function serveBatches(handler: BatchHandler): Serve {
  // `waiting`: the messages queued behind the batch, in hand too: their ack_wait must not run out either.
  const handle = async (batch: JsMsg[], waiting: readonly JsMsg[], stopping: AbortSignal, pull: Pull) => {
    const { log, maxDeliver } = pull;
    const done = keepWorking(() => [...batch, ...waiting], pull.ackWaitMs);
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
          if (!stopping.aborted) {
            const delay = backoffDelay(deliveryCount, pull.backoff);
            log.warn({ err, ...seqs, deliveryCount, retryInMs: delay }, "handler failed; the batch is retried");
            await sleep(delay, undefined, { signal: stopping }).catch(() => undefined);
          }
          if (stopping.aborted) {
            for (const m of batch) m.nak();
            return;
          }
        }
      }
    } finally {
      done();
    }
  };

  return async (messages, stopping, pull) => {
    const queue: JsMsg[] = [];
    let ended = false;
    let arrived: (() => void) | undefined;
    const pump = (async () => {
      try {
        for await (const m of messages) {
          queue.push(m);
          arrived?.();
        }
      } finally {
        ended = true;
        arrived?.();
      }
    })();
    const onStop = () => arrived?.();
    stopping.addEventListener("abort", onStop);
    try {
      while (!stopping.aborted) {
        if (queue.length === 0) {
          if (ended) break;
          await new Promise<void>((resolve) => (arrived = resolve));
          arrived = undefined;
          continue;
        }
        await handle(queue.splice(0, pull.maxMessages), queue, stopping, pull);
      }
    } finally {
      stopping.removeEventListener("abort", onStop);
    }
    // Stopped: what is still queued goes back to the broker now rather than after ack_wait.
    for (const m of queue.splice(0)) m.nak();
    await pump;
  };
}

function busMessage(m: JsMsg): BusMessage {
  return {
    ...traceOf(m.headers),
    subject: m.subject,
    data: m.data,
    msgId: m.headers?.get("Nats-Msg-Id") || `${m.info.stream}:${m.seq}`,
    deliveryCount: m.info.deliveryCount,
    streamSequence: m.seq,
  };
}

/**
 * EventBus.ackFloor: the largest of ack_floor.stream_seq (it moves a few ms
 * after the acks), opt_start_seq - 1 (the owner recorded everything before it,
 * yet ack_floor stays 0 until the first ack), and delivered.stream_seq when nothing is in hand.
 */
export async function consumerAckFloor(
  jsm: JetStreamManager,
  stream: string,
  durable: string,
): Promise<number | undefined> {
  const info = await consumerInfo(jsm, stream, durable);
  if (!info) return undefined;
  const started =
    info.config.deliver_policy === DeliverPolicy.StartSequence && info.config.opt_start_seq
      ? info.config.opt_start_seq - 1
      : 0;
  const idle = info.num_ack_pending === 0 ? info.delivered.stream_seq : 0;
  return Math.max(info.ack_floor.stream_seq, started, idle);
}

function consumerInfo(jsm: JetStreamManager, stream: string, durable: string): Promise<ConsumerInfo | undefined> {
  return jsm.consumers.info(stream, durable).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
}

export function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { code?: number; err_code?: number } };
  return e?.api_error?.code === 404 || e?.code === "404";
}
