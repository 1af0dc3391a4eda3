// The events of one subscription, each with its delivery's state, scoped like
// the subscriptions to the pair (organisation, client application) of the
// token:
//
//   GET /oauth/webhooks/subscriptions/{id}/events?limit=&cursor=    webhooks:read
//
// The delivery log (…/deliveries) lists attempts, the POSTs made; an event
// still waiting for its first attempt (behind an ordered subscription's head,
// during a pause its target asked for, or queued under load) shows only here.
// One entry per event sent, or to be sent, to this subscription, newest
// first: its status ("pending", "succeeded", "gave_up", …), attempts so far,
// the last attempt's HTTP status and error, and when it is sent next. Its id
// is what the retry route (…/deliveries/{delivery_id}/retry) takes. Paged
// like the other lists (`?limit=` 1 to 100, default 50; `Link: <…>;
// rel="next"`).
//
// 404 for another pair's subscription; a deleted subscription's events stay
// readable by its pair while its recorded end is kept
// (DELIVERY_LOG_RETENTION_DAYS), with Subscription-State as on the log.
import type { Client } from "@connectrpc/connect";
import { z } from "zod";
import type { FastifyInstance, onRequestAsyncHookHandler } from "fastify";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { linkNext, readListQuery } from "../list-paging.js";
import { DEFAULT_ERROR, HEADERS, IdParam, ListQuery, bearerErrors, error, json, needs } from "../schemas/common.js";
import { Delivery, deliveryExample } from "../schemas/subscriptions.js";
import { subscriptionOrEnd } from "../../services/delivery/subscription-or-end.js";
import { subscriptionState } from "../../services/delivery/subscription-state.js";
import { deliveryJson } from "./delivery-json.js";
import { SUBSCRIPTION_STATE_HEADER, replySubscriptionState } from "./deliveries.js";
import { SUBSCRIPTIONS_PATH, readIntParam, subscriptionErrors, tokenOwner } from "./subscriptions.js";

const LIST_DEFAULT = 50;
const LIST_MAX = 100;
const NO_STORE = { "cache-control": "no-store" };

const SCHEMA = {
  operationId: "listSubscriptionEvents",
  summary: "The events of a subscription, with each delivery's state",
  description:
    "One entry per event sent, or to be sent, to the subscription, newest first: its status, the attempts made so far, the last attempt's HTTP status and error, " +
    "and while pending when it is sent next. An event waiting for its first attempt shows here before it shows in the delivery log. " +
    "The id is the delivery_id the retry route takes.",
  tags: ["Deliveries"],
  security: needs("webhooks:read"),
  params: z.object({ id: IdParam("id", "The subscription's id") }),
  querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
  response: {
    200: json("One page of the subscription's events", z.array(Delivery).describe("Newest first"), [deliveryExample], {
      "cache-control": HEADERS.noStore,
      link: HEADERS.link,
      "subscription-state": SUBSCRIPTION_STATE_HEADER,
      "subscription-state-reason": {
        type: "string",
        description: "Why and when it was disabled or deleted; absent otherwise",
      },
    }),
    400: error(
      "The id, limit or cursor is not valid",
      "invalid_request",
      "limit: expected a whole number from 1 to 100",
    ),
    ...bearerErrors("webhooks:read"),
    404: error(
      "No such subscription of this token's pair, and nothing of it kept",
      "not_found",
      "subscription 42 not found",
    ),
    default: DEFAULT_ERROR,
  },
};

export function subscriptionEventRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  webhook: Client<typeof WebhookService>,
  delivery: Client<typeof DeliveryService>,
  publicUrl: string,
): void {
  const read = bearer.requireScope("webhooks:read") as onRequestAsyncHookHandler;

  app.get(
    `${SUBSCRIPTIONS_PATH}/:id/events`,
    { schema: SCHEMA, onRequest: read, errorHandler: subscriptionErrors },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const { limit, cursor } = readListQuery(request, LIST_DEFAULT, LIST_MAX);
      // The subscription (or its recorded end) first: the delivery service answers
      // an empty list for a subscription its caller does not own.
      const { subscription, end, missing } = await subscriptionOrEnd(
        webhook,
        tokenOwner(request),
        id,
        rpcOptions(request),
      );
      const state = subscriptionState(subscription, undefined, end);
      if (!state) throw missing;
      const res = await delivery.listDeliveries(
        { owner: tokenOwner(request), subscriptionId: id, pageSize: limit, pageToken: cursor },
        rpcOptions(request),
      );
      linkNext(reply, publicUrl, `${SUBSCRIPTIONS_PATH}/${id}/events`, limit, res.nextPageToken);
      replySubscriptionState(reply, state);
      return reply.headers(NO_STORE).send(res.deliveries.map(deliveryJson));
    },
  );
}
