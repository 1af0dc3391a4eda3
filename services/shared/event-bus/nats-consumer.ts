// The NATS bus's durable consumers: one loop (runDurable) that makes sure of
// the stream and the durable consumer, opens its pull, serves it until the
// pull ends (a deleted stream or consumer, a lost connection), and opens it
// again after a pause; and the two ways of serving a pull, one message at a
// time (serveMessages) or in batches (serveBatches).
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
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../trace/traceparent.js";
import type { Logger } from "../logger.js";
import { consumerPendingSources } from "../metrics/metrics.js";
import { addSource } from "../metrics/scrape-sources.js";
import {
  redeliveryBackoff,
  subjectFor,
  traceFields,
  type BatchHandler,
  type BusMessage,
  type Consumer,
  type ConsumerOptions,
  type MessageHandler,
} from "./event-bus.js";

/** What the consumers need of the bus. */
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

export interface PullSettings {
  ackWaitMs: number;
  maxDeliver: number;
  maxAckPending: number | undefined;
  /** Messages in hand at a time. */
  maxMessages: number;
}

/** A pull that could not be opened, or ended with an error, is opened again after this. */
const REOPEN_BACKOFF: Backoff = { baseMs: 1000, maxMs: 1000 };

/** Serves one opened pull until it ends or `stopping` is aborted. */
export type Serve = (messages: ConsumerMessages, stopping: AbortSignal) => Promise<void>;

/** The one reopen loop of every durable consumer; the returned consumer stops it. */
export function runDurable(
  ctx: DurableContext,
  options: ConsumerOptions,
  settings: PullSettings,
  serve: Serve,
): Consumer {
  const log = ctx.logger.child({ consumer: options.durable });
  const stopping = new AbortController();
  let messages: ConsumerMessages | undefined;
  const loop = new PollLoop({
    backoff: REOPEN_BACKOFF,
    onError: (err) => log.warn({ err }, "consumer interrupted; retrying"),
    round: async () => {
      messages = await openDurable(ctx, options, log, settings);
      if (stopping.signal.aborted) {
        messages.stop();
        return 0;
      }
      await serve(messages, stopping.signal);
      ctx.streamMayBeGone();
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

/**
 * Makes sure of the stream and the durable consumer (created, or brought up
 * to date), and opens its pull.
 */
async function openDurable(
  ctx: DurableContext,
  options: ConsumerOptions,
  log: Logger,
  settings: PullSettings,
): Promise<ConsumerMessages> {
  await ctx.ensureStream();
  const config = {
    ack_policy: AckPolicy.Explicit,
    ack_wait: nanos(settings.ackWaitMs),
    max_deliver: settings.maxDeliver,
    filter_subject: subjectFor(ctx.prefix, options.subject),
    ...(settings.maxAckPending ? { max_ack_pending: settings.maxAckPending } : {}),
  };
  let existing: ConsumerInfo | undefined;
  try {
    existing = await ctx.jsm.consumers.info(ctx.stream, options.durable);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  if (existing) {
    // Where it starts cannot change on a consumer that exists (nor need to: it has its position).
    await ctx.jsm.consumers.update(ctx.stream, options.durable, config);
  } else {
    // Created, or lost and created again: right after what the owner recorded as handled,
    // never DeliverPolicy.All, which would hand out the whole retained stream again.
    let after = await options.startAfterSequence?.();
    if (after !== undefined) {
      // A position past the stream's end belongs to a stream that is gone (this one was
      // created since): all of this one is new.
      const { state } = await ctx.jsm.streams.info(ctx.stream);
      if (after > state.last_seq) {
        log.warn(
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
    log.info({ ...start }, "creating the durable consumer");
    await ctx.jsm.consumers.add(ctx.stream, { durable_name: options.durable, ...config, ...start });
  }
  const consumer = await ctx.js.consumers.get(ctx.stream, options.durable);
  // A deleted stream or consumer ends the iterator: the loop opens it again.
  return consumer.consume({ max_messages: settings.maxMessages, abort_on_missing_resource: true });
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
export function serveMessages(
  options: ConsumerOptions,
  settings: PullSettings,
  handler: MessageHandler,
  log: Logger,
): Serve {
  return async (messages, stopping) => {
    for await (const m of messages) {
      const done = keepWorking(() => [m], settings.ackWaitMs);
      try {
        await handler(busMessage(m));
        m.ack();
      } catch (err) {
        if (m.info.deliveryCount >= settings.maxDeliver) {
          log.error(
            { err, subject: m.subject, seq: m.seq, deliveryCount: m.info.deliveryCount },
            "handler failed on the last delivery; message given up",
          );
          m.term();
        } else {
          const delay = backoffDelay(m.info.deliveryCount, redeliveryBackoff(options));
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
export function serveBatches(
  options: ConsumerOptions,
  settings: PullSettings,
  batchSize: number,
  handler: BatchHandler,
  log: Logger,
): Serve {
  // `waiting`: the messages queued behind the batch. They are in hand too: while the
  // batch is handled (or retried), their ack_wait must not run out either, or the
  // broker would hand them out again to a consumer that still has them.
  const handle = async (batch: JsMsg[], waiting: readonly JsMsg[], stopping: AbortSignal) => {
    const done = keepWorking(() => [...batch, ...waiting], settings.ackWaitMs);
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
          if (deliveryCount >= settings.maxDeliver) {
            log.error({ err, ...seqs, deliveryCount }, "handler failed on the last delivery; batch given up");
            for (const m of batch) m.term();
            return;
          }
          if (!stopping.aborted) {
            const delay = backoffDelay(deliveryCount, redeliveryBackoff(options));
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

  return async (messages, stopping) => {
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
        await handle(queue.splice(0, batchSize), queue, stopping);
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
    ...traceFields({ traceparent: m.headers?.get(TRACEPARENT_HEADER), tracestate: m.headers?.get(TRACESTATE_HEADER) }),
    subject: m.subject,
    data: m.data,
    msgId: m.headers?.get("Nats-Msg-Id") || `${m.info.stream}:${m.seq}`,
    deliveryCount: m.info.deliveryCount,
    streamSequence: m.seq,
  };
}

/**
 * EventBus.ackFloor from the consumer's info. What nats-server (2.9/2.10)
 * reports, checked against a real server (test/delivery/nats-ack-floor.test.ts):
 * - ack_floor.stream_seq: every message of the consumer at or below it is
 *   acked (or terminated). It moves only when the server has processed the
 *   acks, a few ms after the client sent them (acks are not awaited), so a
 *   caller that just acked looks again shortly after.
 * - With nothing acknowledged yet it is 0, even on a consumer created with
 *   opt_start_seq (created again after a loss, ConsumerOptions
 *   .startAfterSequence): there delivered.stream_seq is opt_start_seq - 1 and
 *   the ack floor stays 0 until the first ack. Everything before
 *   opt_start_seq was recorded by the owner before (that is where it asked to
 *   start), so opt_start_seq - 1 counts as acknowledged.
 * - With nothing in hand (num_ack_pending 0) everything delivered is acked:
 *   delivered.stream_seq counts too (the consumer delivers in stream order,
 *   and a message it skipped is another subject's).
 * The floor is the largest of these three. Messages of other subjects above
 * it are not the consumer's and do not matter to it.
 */
export async function consumerAckFloor(
  jsm: JetStreamManager,
  stream: string,
  durable: string,
): Promise<number | undefined> {
  let info: ConsumerInfo;
  try {
    info = await jsm.consumers.info(stream, durable);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const started =
    info.config.deliver_policy === DeliverPolicy.StartSequence && info.config.opt_start_seq
      ? info.config.opt_start_seq - 1
      : 0;
  const idle = info.num_ack_pending === 0 ? info.delivered.stream_seq : 0;
  return Math.max(info.ack_floor.stream_seq, started, idle);
}

export function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; api_error?: { code?: number; err_code?: number } };
  return e?.api_error?.code === 404 || e?.code === "404";
}
