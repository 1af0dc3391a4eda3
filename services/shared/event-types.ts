// The event types, defined once: the wire enum (bizcard.events.v1.EventType)
// and the name a subscription stores and shows, also the subject after the
// prefix (`bizcard.contact.created`) and the webhook schema's check constraint.
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { invalid } from "./validation.js";

/** The event types that exist (every EventType but UNSPECIFIED). */
export type KnownEventType = EventType.CONTACT_CREATED | EventType.CONTACT_UPDATED;

const NAMES = {
  [EventType.CONTACT_CREATED]: "contact.created",
  [EventType.CONTACT_UPDATED]: "contact.updated",
} as const satisfies Record<KnownEventType, string>;

export type EventTypeName = (typeof NAMES)[KnownEventType];

/** Every name, in enum order. */
export const EVENT_TYPE_NAMES: readonly EventTypeName[] = Object.values(NAMES);

const TYPES = new Map<string, KnownEventType>(
  (Object.entries(NAMES) as [string, EventTypeName][]).map(([type, name]) => [name, Number(type) as KnownEventType]),
);

/** The name of a known event type ("contact.created"). */
export function nameOfEventType(type: KnownEventType): EventTypeName {
  return NAMES[type];
}

/** The subscribable name of a wire value; UNSPECIFIED or an unknown number is INVALID_ARGUMENT. */
export function eventTypeName(type: EventType): EventTypeName {
  const name = (NAMES as Partial<Record<EventType, EventTypeName>>)[type];
  if (!name) throw invalid("event_type", `expected ${EVENT_TYPE_NAMES.join(" or ")}`);
  return name;
}

/** The wire enum of a stored name (UNSPECIFIED for anything else, which the checks above never store). */
export function eventTypeOf(name: string): EventType {
  return TYPES.get(name) ?? EventType.UNSPECIFIED;
}
