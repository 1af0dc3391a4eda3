// A subscription's delivery log (every attempt), its events (every delivery)
// and sending a delivery again, scoped like the subscriptions to the token's
// pair. The subscription, or once deleted its recorded end, is read first: the
// delivery service answers an empty list for one its caller does not own, and
// another pair's is 404. The lists say whether it is active, disabled or
// deleted, and why (Subscription-State, Subscription-State-Reason).
import { Code, ConnectError } from "@connectrpc/connect";
import { z } from "zod";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ApiDeps } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HttpError } from "../errors.js";
import { linkNext, readListQuery } from "../list-paging.js";
import { HEADERS, IdParam, ListQuery, bearerErrors, error, json, needs } from "../schemas/common.js";
import { AttemptList, Delivery as DeliveryOut, attemptExample, deliveryExample } from "../schemas/subscriptions.js";
import { subscriptionOrEnd } from "../../services/delivery/subscription-or-end.js";
import { headerSafe, subscriptionState, type SubscriptionState } from "../../services/delivery/subscription-state.js";
import { SUBSCRIPTIONS_PATH, readIntParam, subscriptionErrors, tokenOwner } from "./subscriptions.js";
import { attemptJson, deliveryJson } from "./delivery-json.js";
import { LIST_DEFAULT, LIST_MAX } from "./subscription-route-schemas.js";

const TAGS = ["Deliveries"];
const noStore = { "cache-control": HEADERS.noStore };
const SubscriptionId = z.object({ id: IdParam("id", "The subscription's id") });
const badList = error(
  "The id, limit or cursor is not valid",
  "invalid_request",
  "limit: expected a whole number from 1 to 100",
);
const disabled =
  "the subscription is disabled (every delivery attempt failed); update it with PUT to enable it, then retry";

/** The 200 headers of a list: its page, and the subscription's state. */
const listHeaders = (reason: { description: string; example?: string }) => ({
  ...noStore,
  link: HEADERS.link,
  "subscription-state": {
    type: "string",
    enum: ["active", "disabled", "deleted"],
    description:
      "active: receives events; disabled: every attempt failed for a while (a PUT enables it); deleted (by its owner, with the application's access, or by a 410 answer)",
    required: true,
  },
  "subscription-state-reason": { type: "string", ...reason },
});

const LIST_SCHEMA = {
  operationId: "listDeliveryAttempts",
  summary: "The delivery log of a subscription",
  description:
    "Every attempt (each POST to the target), newest first, with its event, HTTP status, duration and error. " +
    "A deleted subscription's log stays readable by its owner for the retention period, even once empty; the Subscription-State headers say why and when it stopped.",
  tags: TAGS,
  security: needs("webhooks:read"),
  params: SubscriptionId,
  querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
  response: {
    200: json(
      "One page of attempts",
      AttemptList,
      [attemptExample],
      listHeaders({
        description:
          "Why and when it was disabled or deleted, or that its last delivery gave up; absent otherwise. A deleted subscription says who ended it: " +
          '"deleted at <time> by its owner (DELETE)", "deleted at <time>: the application\'s access to the organisation was revoked" or ' +
          '"deleted at <time>: the target answered 410 Gone (it asked for no more events)"',
        example: "deleted at 2026-11-24T09:12:03.000Z: the target answered 410 Gone (it asked for no more events)",
      }),
    ),
    400: badList,
    ...bearerErrors("webhooks:read"),
    404: error(
      "No such subscription of this token's pair, and nothing of it kept (its end and delivery log are pruned after the retention period)",
      "not_found",
      "subscription 42 not found",
    ),
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
  params: SubscriptionId.extend({ delivery_id: IdParam("delivery_id", "The delivery's id (delivery_id in the log)") }),
  response: {
    202: json("Accepted: the delivery, pending", DeliveryOut, deliveryExample, noStore),
    400: error(
      "An id is not a positive integer",
      "invalid_request",
      'delivery_id: expected a positive integer, not "x"',
    ),
    ...bearerErrors("webhooks:write"),
    404: error(
      "No such subscription of this token's pair (or no such delivery of it)",
      "not_found",
      "subscription 42 not found",
    ),
    409: error(
      "The subscription is disabled (re-enable it with PUT first), or the delivery was cancelled",
      "conflict",
      disabled,
    ),
  },
};

const EVENTS_SCHEMA = {
  operationId: "listSubscriptionEvents",
  summary: "The events of a subscription, with each delivery's state",
  description:
    "One entry per event sent, or to be sent, to the subscription, newest first: its status, the attempts made so far, the last attempt's HTTP status and error, " +
    "and while pending when it is sent next. An event waiting for its first attempt shows here before it shows in the delivery log. " +
    "The id is the delivery_id the retry route takes.",
  tags: TAGS,
  security: needs("webhooks:read"),
  params: SubscriptionId,
  querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
  response: {
    200: json(
      "One page of the subscription's events",
      z.array(DeliveryOut).describe("Newest first"),
      [deliveryExample],
      listHeaders({ description: "Why and when it was disabled or deleted; absent otherwise" }),
    ),
    400: badList,
    ...bearerErrors("webhooks:read"),
    404: error(
      "No such subscription of this token's pair, and nothing of it kept",
      "not_found",
      "subscription 42 not found",
    ),
  },
};

function replySubscriptionState(reply: FastifyReply, state: SubscriptionState): FastifyReply {
  reply.header("subscription-state", state.state);
  if (state.reason) reply.header("subscription-state-reason", headerSafe(state.reason));
  return reply.header("cache-control", "no-store");
}

export function deliveryRoutes(app: FastifyInstance, { bearer, clients, issuer }: ApiDeps): void {
  const { webhook, delivery } = clients;
  const read = bearer.requireScope("webhooks:read");
  const write = bearer.requireScope("webhooks:write");
  const errorHandler = subscriptionErrors;
  /** A page of one subscription's log: its id, the page asked for, and the subscription or how it ended. */
  const subscriptionPage = async (request: FastifyRequest) => {
    const id = readIntParam(request, "id");
    const page = readListQuery(request, LIST_DEFAULT);
    const owner = tokenOwner(request);
    return { id, owner, ...page, ...(await subscriptionOrEnd(webhook, owner, id, rpcOptions(request))) };
  };

  app.get(
    `${SUBSCRIPTIONS_PATH}/:id/deliveries`,
    { schema: LIST_SCHEMA, onRequest: read, errorHandler },
    async (request, reply) => {
      const { id, limit, cursor, owner, subscription, end, missing } = await subscriptionPage(request);
      const list = (pageSize: number, pageToken: string) =>
        delivery.listDeliveryAttempts({ owner, subscriptionId: id, pageSize, pageToken }, rpcOptions(request));
      const res = await list(limit, cursor);
      const newest = cursor ? (await list(1, "")).attempts[0] : res.attempts[0];
      const state = subscriptionState(subscription, newest, end);
      if (!state) throw missing;
      linkNext(reply, issuer, `${SUBSCRIPTIONS_PATH}/${id}/deliveries`, limit, res.nextPageToken);
      return replySubscriptionState(reply, state).send(res.attempts.map(attemptJson));
    },
  );

  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/deliveries/:delivery_id/retry`,
    { schema: RETRY_SCHEMA, onRequest: write, errorHandler },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const deliveryId = readIntParam(request, "delivery_id");
      const owner = tokenOwner(request);
      const { subscription } = await webhook.getSubscription({ owner, id }, rpcOptions(request));
      if (subscription!.disableTime) throw new HttpError(409, "conflict", disabled);
      try {
        const res = await delivery.retryDelivery({ owner, subscriptionId: id, deliveryId }, rpcOptions(request));
        return reply.status(202).header("cache-control", "no-store").send(deliveryJson(res.delivery!));
      } catch (err) {
        // Cancelled (its subscription was disabled or deleted when it was due): nothing to resend it to as it was.
        const cancelled = err instanceof ConnectError && err.code === Code.FailedPrecondition;
        const description = "this delivery was cancelled and cannot be sent again; new events are delivered";
        throw cancelled ? new HttpError(409, "conflict", description) : err;
      }
    },
  );

  // An event still waiting for its first attempt shows here, not yet in the log.
  app.get(
    `${SUBSCRIPTIONS_PATH}/:id/events`,
    { schema: EVENTS_SCHEMA, onRequest: read, errorHandler },
    async (request, reply) => {
      const { id, limit, cursor, owner, subscription, end, missing } = await subscriptionPage(request);
      const state = subscriptionState(subscription, undefined, end);
      if (!state) throw missing;
      const res = await delivery.listDeliveries(
        { owner, subscriptionId: id, pageSize: limit, pageToken: cursor },
        rpcOptions(request),
      );
      linkNext(reply, issuer, `${SUBSCRIPTIONS_PATH}/${id}/events`, limit, res.nextPageToken);
      return replySubscriptionState(reply, state).send(res.deliveries.map(deliveryJson));
    },
  );
}
