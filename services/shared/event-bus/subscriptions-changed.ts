// The announcement that an organisation's webhook subscriptions changed
// (EventBus.announce: every process hears it before the change's RPC
// answers): delivery workers drop the subscribers they cached for it
// (services/delivery/worker/subscriber-cache.ts).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { SubscriptionsChangedSchema } from "../../../gen/bizcard/events/v1/events_pb.js";
import type { Consumer, EventBus } from "./event-bus.js";
import type { Logger } from "../logger.js";

const TOPIC = "subscriptions.changed";

/** Never throws: a listener that may have missed it is not caching (the bus is down), or drops the entry at its TTL. */
export async function announceSubscriptionsChanged(
  bus: EventBus,
  organisationId: string,
  logger: Logger,
): Promise<void> {
  try {
    await bus.announce(
      TOPIC,
      toBinary(SubscriptionsChangedSchema, create(SubscriptionsChangedSchema, { organisationId })),
    );
  } catch (err) {
    logger.warn(
      { err, organisationId },
      "subscriptions.changed not announced; delivery workers' caches catch up at their TTL",
    );
  }
}

export function listenSubscriptionsChanged(
  bus: EventBus,
  onChange: (organisationId: string) => void,
  logger: Logger,
): Promise<Consumer> {
  return bus.listen(TOPIC, (m) => {
    try {
      onChange(fromBinary(SubscriptionsChangedSchema, m.data).organisationId);
    } catch (err) {
      logger.warn({ err }, "subscriptions.changed that does not decode; every cached subscriber dropped");
      onChange("");
    }
  });
}
