// The JetStream consumer of contact events. It only fans out: the event's
// subscribers (webhook service, ListSubscribers: organisation + event type)
// each get a pending delivery row, due now, unique on (event, subscription),
// written with the event's body and the stream sequence reached, before the
// ack. The workers do the HTTP, so a slow target never holds a message and
// retries never depend on the broker.
//
// In batches (EventBus consumeBatches; max_ack_pending = FAN_OUT_BATCH): the
// events that arrived together are handled together: one ListSubscribersOfMany
// for every distinct (organisation, event type) of the batch, one INSERT statement for
// all their rows and the position, then all are acknowledged. A lone event
// goes at once, alone; under load, the events that arrived while a batch was
// being written make the next one. Batches are handled in stream order, a
// failed one retried before anything later is handed out, so the recorded
// sequence is the point up to which everything was handled. If the durable
// consumer is lost, it is created again right after that sequence
// (ConsumerOptions.startAfterSequence): nothing handled comes back and
// nothing published meanwhile is skipped (and should something come back,
// an event already recorded adds nothing).
// With several delivery processes fanning out at once, each process keeps
// its own batches in order, but two processes' batches can finish out of
// order: if one process dies holding a batch that another's later batch
// overtook, AND the consumer is lost before ack_wait hands that batch to
// someone else, the recreated consumer starts after it. Run one fan-out
// (the compose file runs one delivery process) or accept that narrow case.
// Two processes' batches finishing out of order is why an ordered
// subscription's rows carry their event's stream sequence, and why the claim
// sends an ordered row only at or below the consumer's ack floor (the
// fan-out's watermark, EventBus.ackFloor): a batch is acknowledged only after
// its rows are written, so every event at or below the floor is recorded. In
// the narrow case above, the lost batch's events are never recorded, and
// ordered deliveries go on without them.
//
// Who gets an event: the subscriptions that ListSubscribers(OfMany) returns when the
// event's batch is handled, read afresh for every batch (no cache). A
// disabled subscription's delivery is recorded as skipped (status and log
// outcome "skipped", kept like the rest of the log): nothing is sent, and its
// owner sees what it missed while it was disabled. So a
// subscription whose CreateSubscription returned before the contact change
// committed gets the event: its row was committed before the event was even
// published. One created while the event is in flight may get it too.
// In the embedded start the in-process bus hands events over one at a time
// (batches of one).
//
// Trace context: an event's traceparent (the request that made it, carried by
// the bus) is kept with the event, and its tracestate beside it; every POST of
// it continues that trace and sends that tracestate.
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { ContactEventSchema, type ContactEvent } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Subscriber, WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../../shared/contact-json.js";
import { consumeInBatches, type BusMessage, type Consumer, type EventBus } from "../../shared/event-bus/event-bus.js";
import { eventTypeName } from "../../shared/event-types.js";
import type { Logger } from "../../shared/logger.js";
import { isUuid } from "../../shared/validation.js";
import { acceptTracestate, formatTraceparent, parseTraceparent } from "../../shared/trace/traceparent.js";
import { startSpan, tracingState, type WorkSpan } from "../../shared/trace/tracing.js";
import type { DeliveryStore } from "../deliveries/delivery-store.js";

export const CONTACT_FAN_OUT_CONSUMER = "delivery-contacts";

/** CONTRACT: body `{"type": "contact.created", "timestamp": "<RFC 3339>", "data": {<contact>}}`. */
export function webhookBody(type: string, occurredAt: Date, data: object): string {
  return JSON.stringify({ type, timestamp: occurredAt.toISOString(), data });
}

/** At most this many events per batch (and handed out, not yet acknowledged). */
export const FAN_OUT_BATCH = 256;

export interface FanOutDeps {
  bus: EventBus;
  store: DeliveryStore;
  webhook: Client<typeof WebhookService>;
  logger: Logger;
  /**
   * Called after rows were written, before the batch is acknowledged: the
   * local workers look at once. `ordered`: some rows are an ordered
   * subscription's, which wait for the acknowledgement (the fan-out's
   * watermark, delivery-claim.ts): the workers look again soon after.
   */
  onDeliveries: (ordered: boolean, subscriptions: bigint[]) => void;
}

export function consumeContactEvents(deps: FanOutDeps): Promise<Consumer> {
  const log = deps.logger.child({ consumer: CONTACT_FAN_OUT_CONSUMER });
  return consumeInBatches(
    deps.bus,
    {
      durable: CONTACT_FAN_OUT_CONSUMER,
      subject: "contact.>",
      batchSize: FAN_OUT_BATCH,
      maxAckPending: 1, // one at a time where there are no batches
      // Short, so that what a crashed process held is handed out again within seconds; a
      // live one keeps what it holds (the batch and the queue behind it) with working().
      ackWaitMs: 5_000,
      retryDelayMs: 500,
      maxRetryDelayMs: 60_000,
      // About 1.5 hours of retries (webhook service or database down) before a batch is given up.
      maxDeliver: 100,
      startAfterSequence: () => deps.store.position(CONTACT_FAN_OUT_CONSUMER),
    },
    async (messages) => {
      const spans: WorkSpan[] = [];
      try {
        await fanOutBatch(messages, deps, log, spans);
      } catch (err) {
        for (const span of spans) span.end(err);
        throw err;
      }
      for (const span of spans) span.end();
    },
  );
}

/**
 * One batch: its events (each once), their subscribers, their rows in one
 * statement. Exporting spans: each event's fan-out is a span of its trace
 * (the consumer side of the relay's publish), its deliveries continue from
 * it; `spans` gets them, the caller ends them.
 */
async function fanOutBatch(messages: BusMessage[], deps: FanOutDeps, log: Logger, spans: WorkSpan[]): Promise<void> {
  const events = new Map<
    string,
    {
      event: ContactEvent;
      type: string;
      streamSequence: number | undefined;
      traceparent: string | undefined;
      tracestate: string | undefined;
    }
  >();
  let lastSequence: number | undefined;
  for (const message of messages) {
    if (message.streamSequence !== undefined) lastSequence = Math.max(lastSequence ?? 0, message.streamSequence);
    const decoded = decode(message, log);
    // Twice in one batch (published again past the duplicate window): once is enough.
    if (decoded && !events.has(decoded.event.eventId.toLowerCase())) {
      const trace = parseTraceparent(message.traceparent);
      let traceparent = trace && formatTraceparent(trace);
      // Trace Context §3.3.1: a tracestate only beside a traceparent that parses (parsed once, above).
      const tracestate = trace ? acceptTracestate(message.tracestate) : undefined;
      if (tracingState() === "on") {
        const span = startSpan(`fan-out ${decoded.type}`, traceparent, "consumer", {
          "messaging.system": "nats",
          "messaging.message.id": decoded.event.eventId,
        });
        spans.push(span);
        traceparent = span.traceparent;
      }
      events.set(decoded.event.eventId.toLowerCase(), {
        ...decoded,
        streamSequence: message.streamSequence,
        traceparent,
        tracestate,
      });
    }
  }
  // The subscribers of every distinct (organisation, event type) of the batch, in one call and one read.
  const keys = new Map<string, Lookup>();
  for (const { event } of events.values())
    keys.set(`${event.organisationId.toLowerCase()} ${event.type}`, {
      organisationId: event.organisationId,
      eventType: event.type,
    });
  const answers = await subscribersOf(deps.webhook, [...keys.values()]);
  const found = new Map([...keys.keys()].map((key, i) => [key, answers[i]!]));
  const created = await deps.store.recordFanOut({
    consumer: CONTACT_FAN_OUT_CONSUMER,
    streamSequence: lastSequence,
    events: [...events.values()].map(({ event, type, streamSequence, traceparent, tracestate }) => {
      const occurredAt = event.occurTime ? timestampDate(event.occurTime) : new Date();
      return {
        eventId: event.eventId.toLowerCase(),
        eventType: type,
        organisationId: event.organisationId.toLowerCase(),
        body: webhookBody(type, occurredAt, contactJson(event.contact!)),
        streamSequence,
        traceparent,
        tracestate,
        subscribers: found.get(`${event.organisationId.toLowerCase()} ${event.type}`)!.map((s) => ({
          subscriptionId: s.subscriptionId,
          clientId: s.clientId,
          skipped: s.disabled,
          ordered: s.ordered,
        })),
      };
    }),
  });
  if (created.created > 0) deps.onDeliveries(created.ordered > 0, created.subscriptions);
}

type Lookup = { organisationId: string; eventType: ContactEvent["type"] };

/**
 * The subscribers of each lookup, disabled ones included, in the lookups'
 * order. A webhook service that does not know ListSubscribersOfMany yet (a
 * rolling upgrade) is asked once per lookup. An answer short of a lookup
 * fails the batch (it is handled again): never read as "no subscribers".
 */
async function subscribersOf(webhook: Client<typeof WebhookService>, lookups: Lookup[]): Promise<Subscriber[][]> {
  if (lookups.length === 0) return [];
  try {
    const { results } = await webhook.listSubscribersOfMany({
      lookups: lookups.map((l) => ({ ...l, includeDisabled: true })),
    });
    if (results.length !== lookups.length)
      throw new Error(`ListSubscribersOfMany answered ${results.length} of ${lookups.length} lookups`);
    return results.map((r) => r.subscribers);
  } catch (err) {
    if (!(err instanceof ConnectError && err.code === Code.Unimplemented)) throw err;
    return Promise.all(
      lookups.map(async (l) => (await webhook.listSubscribers({ ...l, includeDisabled: true })).subscribers),
    );
  }
}

/** The event, or undefined (logged) when redelivering cannot make it usable: such a message is skipped, loudly. */
function decode(message: BusMessage, log: Logger): { event: ContactEvent; type: string } | undefined {
  let event: ContactEvent;
  try {
    event = fromBinary(ContactEventSchema, message.data);
  } catch (err) {
    log.error({ err, msgId: message.msgId }, "contact event that does not decode; skipped");
    return undefined;
  }
  let type: string;
  try {
    type = eventTypeName(event.type);
  } catch {
    log.error({ eventId: event.eventId, type: event.type }, "contact event of an unknown type; skipped");
    return undefined;
  }
  if (!isUuid(event.eventId) || !isUuid(event.organisationId) || !event.contact) {
    log.error({ eventId: event.eventId }, "contact event without id, organisation or contact; skipped");
    return undefined;
  }
  return { event, type };
}
