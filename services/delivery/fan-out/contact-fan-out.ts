// The JetStream consumer of contact events. It only fans out: every subscriber
// of the event (ListSubscribersOfMany, read afresh per batch) gets a delivery
// row, pending and due now, or "skipped" while its subscription is disabled
// (logged, never sent), written with the event's body, its trace context and
// the stream sequence reached, before the ack. The workers do the HTTP, so a
// slow target never holds a message.
//
// Batches are handled in stream order, a failed one retried before anything
// later, so the recorded sequence is where a lost durable consumer starts
// again (ConsumerOptions.startAfterSequence). Several processes' batches can
// finish out of order: an ordered subscription's rows carry their sequence,
// and the claim sends them only at or below the consumer's ack floor.
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
import type { DeliveryStore, FanOutEvent } from "../deliveries/delivery-store.js";

export const CONTACT_FAN_OUT_CONSUMER = "delivery-contacts";

/** CONTRACT: body `{"type": "contact.created", "timestamp": "<RFC 3339>", "data": {<contact>}}`. */
export function webhookBody(type: string, occurredAt: Date, data: object): string {
  return JSON.stringify({ type, timestamp: occurredAt.toISOString(), data });
}

/** At most this many events per batch (and handed out, not yet acknowledged). */
const FAN_OUT_BATCH = 256;

interface FanOutDeps {
  bus: EventBus;
  store: DeliveryStore;
  webhook: Client<typeof WebhookService>;
  logger: Logger;
  /** After rows were written, before the ack: the local workers look (`ordered`: again after the ack). */
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
      // Short: what a crashed process held comes back within seconds (a live one extends it).
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
 * statement; `spans`: each event's, for the caller to end.
 */
async function fanOutBatch(messages: BusMessage[], deps: FanOutDeps, log: Logger, spans: WorkSpan[]): Promise<void> {
  const events = new Map<string, { event: ContactEvent; row: Omit<FanOutEvent, "subscribers"> }>();
  let lastSequence: number | undefined;
  for (const message of messages) {
    if (message.streamSequence !== undefined) lastSequence = Math.max(lastSequence ?? 0, message.streamSequence);
    const decoded = decode(message, log);
    const eventId = decoded?.event.eventId.toLowerCase();
    // Twice in one batch (published again past the duplicate window): once is enough.
    if (!decoded || !eventId || events.has(eventId)) continue;
    const { event, type } = decoded;
    const trace = parseTraceparent(message.traceparent);
    let traceparent = trace && formatTraceparent(trace);
    // Trace Context §3.3.1: a tracestate only beside a traceparent that parses.
    const tracestate = trace ? acceptTracestate(message.tracestate) : undefined;
    if (tracingState() === "on") {
      const span = startSpan(`fan-out ${type}`, traceparent, "consumer", {
        "messaging.system": "nats",
        "messaging.message.id": event.eventId,
      });
      spans.push(span);
      traceparent = span.traceparent;
    }
    const occurredAt = event.occurTime ? timestampDate(event.occurTime) : new Date();
    const row = {
      eventId,
      eventType: type,
      organisationId: event.organisationId.toLowerCase(),
      body: webhookBody(type, occurredAt, contactJson(event.contact!)),
      streamSequence: message.streamSequence,
      traceparent,
      tracestate,
    };
    events.set(eventId, { event, row });
  }
  // The subscribers of every distinct (organisation, event type) of the batch, in one call and one read.
  const keyOf = (event: ContactEvent) => `${event.organisationId.toLowerCase()} ${event.type}`;
  const keys = new Map<string, Lookup>();
  for (const { event } of events.values())
    keys.set(keyOf(event), { organisationId: event.organisationId, eventType: event.type });
  const answers = await subscribersOf(deps.webhook, [...keys.values()]);
  const found = new Map([...keys.keys()].map((key, i) => [key, answers[i]!]));
  const created = await deps.store.recordFanOut({
    consumer: CONTACT_FAN_OUT_CONSUMER,
    streamSequence: lastSequence,
    events: [...events.values()].map(({ event, row }) => ({
      ...row,
      subscribers: found.get(keyOf(event))!.map((s) => ({
        subscriptionId: s.subscriptionId,
        clientId: s.clientId,
        skipped: s.disabled,
        ordered: s.ordered,
      })),
    })),
  });
  if (created.created > 0) deps.onDeliveries(created.ordered > 0, created.subscriptions);
}

type Lookup = { organisationId: string; eventType: ContactEvent["type"] };

/**
 * Each lookup's subscribers, disabled ones included. A webhook service without
 * ListSubscribersOfMany (a rolling upgrade) is asked once per lookup. A short
 * answer fails the batch: never read as "no subscribers".
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
    return void log.error({ err, msgId: message.msgId }, "contact event that does not decode; skipped");
  }
  let type: string;
  try {
    type = eventTypeName(event.type);
  } catch {
    return void log.error({ eventId: event.eventId, type: event.type }, "contact event of an unknown type; skipped");
  }
  if (!isUuid(event.eventId) || !isUuid(event.organisationId) || !event.contact)
    return void log.error({ eventId: event.eventId }, "contact event without id, organisation or contact; skipped");
  return { event, type };
}
