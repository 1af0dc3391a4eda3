// The JetStream consumer of contact events. It only fans out: the event's
// subscribers (webhook service, ListSubscribers: organisation + event type)
// each get a pending delivery row, due now, unique on (event, subscription),
// written in ONE statement with the event's body and the stream sequence
// reached, before the ack. The workers do the HTTP, so a slow target never
// holds a message and retries never depend on the broker.
//
// max_ack_pending 1: messages are handled in stream order, a failed one
// before any later one, so the recorded sequence is also the point up to
// which everything was handled. If the durable consumer is lost, it is
// created again right after that sequence (ConsumerOptions.startAfterSequence):
// nothing handled comes back and nothing published meanwhile is skipped
// (and should something come back, the unique pair makes it add nothing).
import { fromBinary } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { ContactEventSchema } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { WebhookService } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../../shared/contact-json.js";
import type { Consumer, EventBus } from "../../shared/event-bus/event-bus.js";
import { eventTypeName } from "../../shared/event-types.js";
import type { Logger } from "../../shared/logger.js";
import { isUuid } from "../../shared/validation.js";
import type { DeliveryStore } from "../deliveries/delivery-store.js";

export const CONTACT_FAN_OUT_CONSUMER = "delivery-contacts";

/** CONTRACT: body `{"type": "contact.created", "timestamp": "<RFC 3339>", "data": {<contact>}}`. */
export function webhookBody(type: string, occurredAt: Date, data: object): string {
  return JSON.stringify({ type, timestamp: occurredAt.toISOString(), data });
}

export function consumeContactEvents(deps: {
  bus: EventBus;
  store: DeliveryStore;
  webhook: Client<typeof WebhookService>;
  logger: Logger;
  /** Called after rows were written: the local workers look at once. */
  onDeliveries: () => void;
}): Promise<Consumer> {
  const log = deps.logger.child({ consumer: CONTACT_FAN_OUT_CONSUMER });
  return deps.bus.consume(
    {
      durable: CONTACT_FAN_OUT_CONSUMER,
      subject: "contact.>",
      maxAckPending: 1,
      ackWaitMs: 30_000,
      retryDelayMs: 500,
      maxRetryDelayMs: 60_000,
      // About 1.5 hours of retries (webhook service or database down) before an event is given up.
      maxDeliver: 100,
      startAfterSequence: () => deps.store.position(CONTACT_FAN_OUT_CONSUMER),
    },
    async (message) => {
      let event;
      try {
        event = fromBinary(ContactEventSchema, message.data);
      } catch (err) {
        // Redelivering cannot make it readable: dropped, loudly.
        log.error({ err, msgId: message.msgId }, "contact event that does not decode; skipped");
        return;
      }
      let type: string;
      try {
        type = eventTypeName(event.type);
      } catch {
        log.error({ eventId: event.eventId, type: event.type }, "contact event of an unknown type; skipped");
        return;
      }
      if (!isUuid(event.eventId) || !isUuid(event.organisationId) || !event.contact) {
        log.error({ eventId: event.eventId }, "contact event without id, organisation or contact; skipped");
        return;
      }
      const { subscribers } = await deps.webhook.listSubscribers({ organisationId: event.organisationId, eventType: event.type });
      const occurredAt = event.occurTime ? timestampDate(event.occurTime) : new Date();
      const created = await deps.store.recordFanOut({
        eventId: event.eventId,
        eventType: type,
        organisationId: event.organisationId.toLowerCase(),
        body: webhookBody(type, occurredAt, contactJson(event.contact)),
        streamSequence: message.streamSequence,
        consumer: CONTACT_FAN_OUT_CONSUMER,
        subscribers: subscribers.map((s) => ({ subscriptionId: s.subscriptionId, clientId: s.clientId })),
      });
      if (created > 0) deps.onDeliveries();
    },
  );
}
