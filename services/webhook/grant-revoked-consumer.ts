// CONTRACT: "Revoking an application's access for an organisation deletes
// that pair's subscriptions." The durable consumer of the auth service's
// grant.revoked; at least once: deleting twice deletes nothing more.
import { fromBinary } from "@bufbuild/protobuf";
import type { MikroORM } from "@mikro-orm/postgresql";
import { GrantRevokedSchema } from "../../gen/bizcard/events/v1/events_pb.js";
import type { Consumer, EventBus } from "../shared/event-bus/event-bus.js";
import type { Logger } from "../shared/logger.js";
import { isUuid } from "../shared/validation.js";
import { announceSubscriptionsChanged } from "../shared/event-bus/subscriptions-changed.js";
import { endSubscriptions } from "./subscriptions/subscription-end.js";

const GRANT_REVOKED_CONSUMER = "webhook-grant-revoked";

export function consumeGrantRevoked(deps: { bus: EventBus; orm: MikroORM; logger: Logger }): Promise<Consumer> {
  return deps.bus.consume({ durable: GRANT_REVOKED_CONSUMER, subject: "grant.revoked" }, async (message) => {
    let event;
    try {
      event = fromBinary(GrantRevokedSchema, message.data);
    } catch (err) {
      // Redelivering cannot make it readable: dropped, loudly.
      deps.logger.error({ err, msgId: message.msgId }, "grant.revoked that does not decode; skipped");
      return;
    }
    if (!isUuid(event.organisationId) || !event.clientId) {
      deps.logger.error({ eventId: event.eventId }, "grant.revoked without a valid pair; skipped");
      return;
    }
    const { eventId, organisationId, clientId, reason } = event;
    const pair = { organisationId: organisationId.toLowerCase(), clientId };
    const deleted = await endSubscriptions(deps.orm.em.fork(), pair, "grant_revoked");
    if (deleted > 0) await announceSubscriptionsChanged(deps.bus, pair.organisationId, deps.logger);
    deps.logger.info(
      { eventId, organisationId, clientId, reason, deleted },
      "grant revoked: the pair's subscriptions deleted",
    );
  });
}
