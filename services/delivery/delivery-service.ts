// DeliveryService: the delivery log of one owner's subscription, newest
// first. The owner (organisation, client application) is required and is part
// of the query: another owner's attempts are never listed.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { MikroORM } from "@mikro-orm/postgresql";
import { DeliveryAttemptSchema, DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { readOwner } from "../shared/owner.js";
import { readPage, timeIdKeyset } from "../shared/pagination.js";
import { invalid } from "../shared/validation.js";
import { DeliveryAttemptEntity, type DeliveryAttempt } from "./attempts/delivery-attempt.entity.js";

export const DELIVERY_SCHEMA = "delivery";

const toMessage = (a: DeliveryAttempt) =>
  create(DeliveryAttemptSchema, {
    id: a.id,
    eventId: a.eventId,
    subscriptionId: BigInt(a.subscriptionId),
    attempt: a.attempt,
    responseStatus: a.responseStatus,
    outcome: a.outcome,
    error: a.error,
    durationMs: a.durationMs,
    attemptTime: timestampFromDate(a.attemptedAt),
  });

export function createDeliveryService(deps: { orm: MikroORM }): ServiceImpl<typeof DeliveryService> {
  return {
    async listDeliveryAttempts(req) {
      const owner = readOwner(req.owner);
      if (req.subscriptionId <= 0n) throw invalid("subscription_id", "expected a positive integer");
      const page = await readPage(timeIdKeyset<DeliveryAttempt>("attemptedAt"), req, (after, options) =>
        deps.orm.em.fork().find(DeliveryAttemptEntity, { ...owner, subscriptionId: Number(req.subscriptionId), ...after }, options),
      );
      return { attempts: page.rows.map(toMessage), nextPageToken: page.nextPageToken };
    },
  };
}
