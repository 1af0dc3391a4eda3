// contact.created / contact.updated, written to the outbox in the same
// transaction as the change.
import { randomUUID } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ContactEventSchema, EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Contact as ContactMessage } from "../../../gen/bizcard/organisation/v1/organisation_pb.js";
import { subjectFor } from "../../shared/event-bus/event-bus.js";
import { nameOfEventType } from "../../shared/event-types.js";
import { enqueueEvent } from "../../shared/outbox/writer.js";

export async function enqueueContactEvent(
  em: EntityManager,
  options: { schema: string; subjectPrefix: string },
  type: EventType.CONTACT_CREATED | EventType.CONTACT_UPDATED,
  contact: ContactMessage,
): Promise<string> {
  const event = create(ContactEventSchema, {
    eventId: randomUUID(),
    type,
    organisationId: contact.organisationId,
    occurTime: timestampFromDate(new Date()),
    contact,
  });
  await enqueueEvent(em, options.schema, {
    id: event.eventId,
    subject: subjectFor(options.subjectPrefix, nameOfEventType(type)),
    payload: toBinary(ContactEventSchema, event),
  });
  return event.eventId;
}
