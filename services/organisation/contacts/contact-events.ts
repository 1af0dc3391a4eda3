// contact.created / contact.updated, written to the outbox in the same
// transaction as the change.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { v7 } from "uuid";
import { ContactEventSchema, type EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { subjectFor } from "../../shared/event-bus/event-bus.js";
import { nameOfEventType } from "../../shared/event-types.js";
import { enqueueEvent, type OutboxEvent } from "../../shared/outbox/writer.js";

type ContactEventType = EventType.CONTACT_CREATED | EventType.CONTACT_UPDATED;

/** The outbox row of a contact's event. */
export function contactEvent(
  options: { subjectPrefix: string },
  type: ContactEventType,
  contact: ContactMessage,
): OutboxEvent {
  const event = create(ContactEventSchema, {
    eventId: v7(),
    type,
    organisationId: contact.organisationId,
    occurTime: timestampFromDate(new Date()),
    contact,
  });
  return {
    id: event.eventId,
    subject: subjectFor(options.subjectPrefix, nameOfEventType(type)),
    payload: toBinary(ContactEventSchema, event),
    orderKey: contact.organisationId,
  };
}

export async function enqueueContactEvent(
  em: EntityManager,
  options: { schema: string; subjectPrefix: string },
  type: ContactEventType,
  contact: ContactMessage,
): Promise<string> {
  const event = contactEvent(options, type, contact);
  await enqueueEvent(em, options.schema, event);
  return event.id;
}
