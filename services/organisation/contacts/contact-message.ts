// A contact on the wire: the Contact message that RPC answers, events carry and
// the gateway renders, and the outbox row of its contact.created or
// contact.updated event (written in the transaction of the change).
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { v7 } from "uuid";
import { ContactEventSchema, type EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import { ContactSchema, type Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { subjectFor } from "../../shared/event-bus/event-bus.js";
import { nameOfEventType } from "../../shared/event-types.js";
import type { OutboxEvent } from "../../shared/outbox/writer.js";
import type { Contact } from "./contact.entity.js";

export function toContactMessage(c: Contact): ContactMessage {
  return create(ContactSchema, {
    id: c.id,
    organisationId: c.organisationId,
    firstName: c.firstName,
    lastName: c.lastName,
    email: c.email,
    phone: c.phone,
    company: c.company,
    jobTitle: c.jobTitle,
    website: c.website,
    address: c.address,
    notes: c.notes,
    createTime: timestampFromDate(c.createdAt),
    updateTime: timestampFromDate(c.updatedAt),
  });
}

export function contactEvent(
  options: { subjectPrefix: string },
  type: EventType.CONTACT_CREATED | EventType.CONTACT_UPDATED,
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
