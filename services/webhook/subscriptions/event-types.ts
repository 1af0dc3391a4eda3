// EventType (wire enum) <-> the name stored and shown ("contact.created").
import { EventType } from "../../../gen/bizcard/events/v1/events_pb.js";
import { invalid } from "../../shared/validation.js";

const NAMES = new Map<EventType, string>([
  [EventType.CONTACT_CREATED, "contact.created"],
  [EventType.CONTACT_UPDATED, "contact.updated"],
]);
const TYPES = new Map([...NAMES].map(([type, name]) => [name, type]));

/** The subscribable name of an event type; UNSPECIFIED or an unknown number is INVALID_ARGUMENT. */
export function eventTypeName(type: EventType): string {
  const name = NAMES.get(type);
  if (!name) throw invalid("event_type", `expected ${[...NAMES.values()].join(" or ")}`);
  return name;
}

/** The wire enum of a stored name (UNSPECIFIED for anything else, which the checks above never store). */
export function eventTypeOf(name: string): EventType {
  return TYPES.get(name) ?? EventType.UNSPECIFIED;
}
