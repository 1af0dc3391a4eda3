// The delivery log of one subscription, scoped like the
// subscriptions to the pair (organisation, client application) of the token:
//
//   GET  /oauth/webhooks/subscriptions/{id}/deliveries?limit=&cursor=    webhooks:read
//   POST /oauth/webhooks/subscriptions/{id}/deliveries/{delivery_id}/retry   webhooks:write
//
// The list is what a developer debugging a receiver wants to read: every
// attempt (each POST), newest first, with its event, HTTP status, duration,
// error and when the next retry is planned, and the delivery it belongs to
// (delivery_id: what the retry route takes). A bare JSON array, paged like
// the subscriptions (`?limit=` 1 to 100, default 50; `Link: <…>; rel="next"`).
//
// The retry sends the delivery (the event, to this subscription) again now:
// 202 Accepted with the delivery, its status "pending", next_retry_at when
// the retry was taken (the time the POST goes out, not a worker's claim
// lease; the end of the subscription's pause while its target asked for
// one; for an ordered subscription's delivery behind its head, "not
// before" the head's next attempt); the attempt shows in the list when it is made. A delivery that already succeeded or gave up gets
// one more attempt; a waiting one is moved to now.
//
// The subscription is read first (GetSubscription with the token's pair): the
// delivery service answers an empty list for a subscription its caller does
// not own, and the client must get 404 for another pair's subscription, as on
// every subscription route. A deleted subscription's log stays readable by
// its pair while the delivery service keeps it, or the webhook service its
// recorded end (both DELIVERY_LOG_RETENTION_DAYS): it is 404 only when both
// are gone. Every list answer says whether the subscription is active,
// disabled or deleted, and why and when (Subscription-State,
// Subscription-State-Reason). A disabled subscription (every attempt failed for
// a while) sends nothing: its retry is 409 until a PUT re-enables it.
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { z } from "zod";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from "fastify";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HttpError } from "../errors.js";
import { linkNext, readListQuery } from "../list-paging.js";
import { DEFAULT_ERROR, HEADERS, IdParam, ListQuery, bearerErrors, error, json, needs } from "../schemas/common.js";
import { AttemptList, Delivery as DeliveryOut, attemptExample, deliveryExample } from "../schemas/subscriptions.js";
import { subscriptionOrEnd } from "../../services/delivery/subscription-or-end.js";
import { headerSafe, subscriptionState, type SubscriptionState } from "../../services/delivery/subscription-state.js";
import { SUBSCRIPTIONS_PATH, readIntParam, subscriptionErrors, tokenOwner } from "./subscriptions.js";
import { attemptJson, deliveryJson } from "./delivery-json.js";

const LIST_DEFAULT = 50;
const LIST_MAX = 100;
const NO_STORE = { "cache-control": "no-store" };

const TAGS = ["Deliveries"];
const noStore = { "cache-control": HEADERS.noStore };
const subscriptionId = IdParam("id", "The subscription's id");
const notFound = error(
  "No such subscription of this token's pair (or no such delivery of it)",
  "not_found",
  "subscription 42 not found",
);

/** Subscription-State, on the delivery log and on a subscription's events (subscription-events.ts). */
export const SUBSCRIPTION_STATE_HEADER = {
  type: "string",
  enum: ["active", "disabled", "deleted"],
  description:
    "active: receives events; disabled: every attempt failed for a while (a PUT enables it); deleted (by its owner, with the application's access, or by a 410 answer)",
  required: true,
};

/** Subscription-State, and Subscription-State-Reason when there is one. */
export function replySubscriptionState(reply: FastifyReply, state: SubscriptionState): void {
  reply.header("subscription-state", state.state);
  if (state.reason) reply.header("subscription-state-reason", headerSafe(state.reason));
}

const LIST_SCHEMA = {
  operationId: "listDeliveryAttempts",
  summary: "The delivery log of a subscription",
  description:
    "Every attempt (each POST to the target), newest first, with its event, HTTP status, duration and error. " +
    "A deleted subscription's log stays readable by its owner for the retention period, even once empty; the Subscription-State headers say why and when it stopped.",
  tags: TAGS,
  security: needs("webhooks:read"),
  params: z.object({ id: subscriptionId }),
  querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
  response: {
    200: json("One page of attempts", AttemptList, [attemptExample], {
      ...noStore,
      link: HEADERS.link,
      "subscription-state": SUBSCRIPTION_STATE_HEADER,
      "subscription-state-reason": {
        type: "string",
        description:
          "Why and when it was disabled or deleted, or that its last delivery gave up; absent otherwise. A deleted subscription says who ended it: " +
          '"deleted at <time> by its owner (DELETE)", "deleted at <time>: the application\'s access to the organisation was revoked" or ' +
          '"deleted at <time>: the target answered 410 Gone (it asked for no more events)"',
        example: "deleted at 2026-11-24T09:12:03.000Z: the target answered 410 Gone (it asked for no more events)",
      },
    }),
    400: error(
      "The id, limit or cursor is not valid",
      "invalid_request",
      "limit: expected a whole number from 1 to 100",
    ),
    ...bearerErrors("webhooks:read"),
    404: error(
      "No such subscription of this token's pair, and nothing of it kept (its end and delivery log are pruned after the retention period)",
      "not_found",
      "subscription 42 not found",
    ),
    default: DEFAULT_ERROR,
  },
};

const RETRY_SCHEMA = {
  operationId: "retryDelivery",
  summary: "Send a delivery again now",
  description:
    "A delivery that succeeded or gave up gets one more attempt; a waiting one is moved to now. The attempt shows in the log when it is made. " +
    "While the subscription's target asked for a pause (throttled_until), it is sent when the pause ends, and next_retry_at says so. " +
    "An ordered subscription's delivery behind its head (an older pending one) goes only when it becomes the head: next_retry_at is then the earliest it can go (not before the head's next attempt).",
  tags: TAGS,
  security: needs("webhooks:write"),
  params: z.object({
    id: subscriptionId,
    delivery_id: IdParam("delivery_id", "The delivery's id (delivery_id in the log)"),
  }),
  response: {
    202: json("Accepted: the delivery, pending", DeliveryOut, deliveryExample, noStore),
    400: error(
      "An id is not a positive integer",
      "invalid_request",
      'delivery_id: expected a positive integer, not "x"',
    ),
    ...bearerErrors("webhooks:write"),
    404: notFound,
    409: error(
      "The subscription is disabled (re-enable it with PUT first), or the delivery was cancelled",
      "conflict",
      "the subscription is disabled (every delivery attempt failed); update it with PUT to enable it, then retry",
    ),
    default: DEFAULT_ERROR,
  },
};

export function deliveryRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  webhook: Client<typeof WebhookService>,
  delivery: Client<typeof DeliveryService>,
  publicUrl: string,
): void {
  const read = bearer.requireScope("webhooks:read") as onRequestAsyncHookHandler;
  const write = bearer.requireScope("webhooks:write") as onRequestAsyncHookHandler;
  const errorHandlerOption = { errorHandler: subscriptionErrors };

  /** The token's pair's subscription, or 404 (another pair's, or none). */
  const ownSubscription = async (request: FastifyRequest, id: bigint) =>
    (await webhook.getSubscription({ owner: tokenOwner(request), id }, rpcOptions(request))).subscription!;

  app.get(
    `${SUBSCRIPTIONS_PATH}/:id/deliveries`,
    { schema: LIST_SCHEMA, onRequest: read, ...errorHandlerOption },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const { limit, cursor } = readListQuery(request, LIST_DEFAULT, LIST_MAX);
      const { subscription, end, missing } = await subscriptionOrEnd(
        webhook,
        tokenOwner(request),
        id,
        rpcOptions(request),
      );
      const list = (pageSize: number, pageToken: string) =>
        delivery.listDeliveryAttempts(
          { owner: tokenOwner(request), subscriptionId: id, pageSize, pageToken },
          rpcOptions(request),
        );
      const res = await list(limit, cursor);
      const newest = cursor ? (await list(1, "")).attempts[0] : res.attempts[0];
      const state = subscriptionState(subscription, newest, end);
      if (!state) throw missing;
      linkNext(reply, publicUrl, `${SUBSCRIPTIONS_PATH}/${id}/deliveries`, limit, res.nextPageToken);
      replySubscriptionState(reply, state);
      return reply.headers(NO_STORE).send(res.attempts.map(attemptJson));
    },
  );

  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/deliveries/:delivery_id/retry`,
    { schema: RETRY_SCHEMA, onRequest: write, ...errorHandlerOption },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const deliveryId = readIntParam(request, "delivery_id");
      const subscription = await ownSubscription(request, id);
      if (subscription.disableTime) {
        throw new HttpError(
          409,
          "conflict",
          "the subscription is disabled (every delivery attempt failed); update it with PUT to enable it, then retry",
        );
      }
      try {
        const res = await delivery.retryDelivery(
          { owner: tokenOwner(request), subscriptionId: id, deliveryId },
          rpcOptions(request),
        );
        return reply.status(202).headers(NO_STORE).send(deliveryJson(res.delivery!));
      } catch (err) {
        // A delivery cancelled (its subscription was disabled or deleted when it was due): nothing to resend it to as it was.
        if (err instanceof ConnectError && err.code === Code.FailedPrecondition) {
          throw new HttpError(
            409,
            "conflict",
            "this delivery was cancelled and cannot be sent again; new events are delivered",
          );
        }
        throw err;
      }
    },
  );
}
