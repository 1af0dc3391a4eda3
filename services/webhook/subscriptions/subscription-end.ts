// Deleting subscriptions and recording why, in one statement, so a deletion
// is never committed without its end. Every path that deletes a subscription
// goes through here.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { SubscriptionEndReason, SubscriptionEndSchema } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeOf } from "../../shared/event-types.js";
import type { Pair } from "../../shared/owner.js";
import type { EndReason, SubscriptionEnd } from "./subscription-end.entity.js";

const SCHEMA = `"webhook"`;

const TO_WIRE: Record<EndReason, SubscriptionEndReason> = {
  deleted_by_owner: SubscriptionEndReason.DELETED_BY_OWNER,
  grant_revoked: SubscriptionEndReason.GRANT_REVOKED,
  gone: SubscriptionEndReason.GONE,
};

/** DeleteSubscriptionRequest.reason; UNSPECIFIED (an older caller) is its owner. */
export function endReasonOf(reason: SubscriptionEndReason): EndReason {
  if (reason === SubscriptionEndReason.GRANT_REVOKED) return "grant_revoked";
  if (reason === SubscriptionEndReason.GONE) return "gone";
  return "deleted_by_owner";
}

/**
 * Deletes the pair's subscription `id` (or, without one, every subscription
 * of the pair) and records each end; answers how many were deleted.
 */
export async function endSubscriptions(em: EntityManager, pair: Pair, reason: EndReason, id?: bigint): Promise<number> {
  const params: unknown[] = [pair.organisationId, pair.clientId];
  if (id !== undefined) params.push(id.toString());
  params.push(reason);
  const rows = await em.execute<{ id: string }[]>(
    `with "deleted" as (
       delete from ${SCHEMA}."subscription" where "organisation_id" = ? and "client_id" = ?${id === undefined ? "" : ` and "id" = ?`}
       returning "id", "organisation_id", "client_id", "target_url", "event_type")
     insert into ${SCHEMA}."subscription_end" ("id", "organisation_id", "client_id", "target_url", "event_type", "reason", "ended_at")
       select "id", "organisation_id", "client_id", "target_url", "event_type", ?, now() from "deleted"
       on conflict ("id") do nothing
     returning "id"`,
    params,
  );
  return rows.length;
}

export function toSubscriptionEndMessage(end: SubscriptionEnd) {
  return create(SubscriptionEndSchema, {
    id: end.id,
    targetUrl: end.targetUrl,
    eventType: eventTypeOf(end.eventType),
    reason: TO_WIRE[end.reason],
    endTime: timestampFromDate(end.endedAt),
  });
}
