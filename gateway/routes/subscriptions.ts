// REST Hooks subscriptions (CONTRACT "Webhook subscriptions"), scoped to the
// pair (organisation, client application) of the access token:
//
//   GET    /oauth/webhooks/subscriptions?limit=&cursor=   webhooks:read
//   POST   /oauth/webhooks/subscriptions                  webhooks:write + contacts:read
//   GET    /oauth/webhooks/subscriptions/{id}             webhooks:read
//   PUT    /oauth/webhooks/subscriptions/{id}             webhooks:write + contacts:read
//                                                         (also re-enables a disabled one)
//   DELETE /oauth/webhooks/subscriptions/{id}             webhooks:write
//
// Every event type is a contact.* one, so creating or re-pointing a
// subscription needs contacts:read too (CONTRACT Scopes: "required, with
// webhooks:write, to subscribe to contact.*"); deleting one does not.
//
// The token is checked in onRequest, before the body is read: a client
// without a valid token never has its body parsed. Bodies are JSON objects;
// the read-only fields of the representation (id, secret, created_at,
// updated_at, disabled_at, disabled_reason) are ignored, so a client may send
// back what it read; any other unknown field is a 400 (a misspelt
// "event_type" must not pass as "nothing to change").
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestAsyncHookHandler,
  preValidationAsyncHookHandler,
} from "fastify";
import type { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import {
  SubscriptionEndReason,
  TargetUnavailableSchema,
  type WebhookService,
} from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeOf } from "../../services/shared/event-types.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HttpError, errorHandler } from "../errors.js";
import { badCursor, linkNext, readListQuery } from "../list-paging.js";
import { LIST_DEFAULT, LIST_MAX, SCHEMAS } from "./subscription-route-schemas.js";

export const SUBSCRIPTIONS_PATH = "/oauth/webhooks/subscriptions";

/** Whose subscriptions a request may touch: the pair (organisation, client application) of its token. */
export const tokenOwner = (request: FastifyRequest) => ({
  organisationId: request.bearer!.organisationId,
  clientId: request.bearer!.clientId,
});
const INT64_MAX = 2n ** 63n - 1n;

const NO_STORE = { "cache-control": "no-store" };

import { deliveryStates, subscriptionJson, subscriptionsJson } from "./subscription-json.js";

export { subscriptionJson, type SubscriptionJson } from "./subscription-json.js";

const invalid = (description: string) => new HttpError(400, "invalid_request", description);

/** A path parameter that is a positive integer (an int64 identity), else 400 naming it. */
export function readIntParam(request: FastifyRequest, name: string): bigint {
  const text = (request.params as Record<string, string>)[name] ?? "";
  const id = /^[1-9][0-9]{0,18}$/.test(text) ? BigInt(text) : 0n;
  if (id <= 0n || id > INT64_MAX)
    throw invalid(`${name}: expected a positive integer, not ${JSON.stringify(text.slice(0, 40))}`);
  return id;
}

/** `{id}`: a positive integer (an int64 identity), else 400. */
const readId = (request: FastifyRequest): bigint => readIntParam(request, "id");

interface SubscriptionFields {
  target_url?: string;
  event_type?: EventType;
  ordered?: boolean;
}

/**
 * Before the body's schema (validation.ts): the id, then the media type, in
 * that order: 400 for a bad id, then 415 for a body that is not JSON. No
 * body at all (a PUT changing nothing) is an empty object.
 */
const jsonBody: preValidationAsyncHookHandler = async (request) => {
  if ((request.params as Record<string, string>).id !== undefined) readId(request);
  if (request.body === undefined && request.headers["content-type"] === undefined) {
    request.body = {};
    return;
  }
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpError(415, "unsupported_media_type", "send the subscription as application/json");
};

/** The checked body's writable fields (the read-only ones are ignored). */
function fieldsOf(request: FastifyRequest): SubscriptionFields {
  const body = request.body as { target_url?: string; event_type?: string; ordered?: boolean };
  return {
    ...(body.ordered !== undefined ? { ordered: body.ordered } : {}),
    ...(body.target_url !== undefined ? { target_url: body.target_url } : {}),
    ...(body.event_type !== undefined ? { event_type: eventTypeOf(body.event_type) } : {}),
  };
}

/** The webhook service's answers in the client's terms; the rest goes to the common handler. */
export function subscriptionErrors(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err instanceof ConnectError) {
    // The pair's cap (WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR): a clear 400, not a conflict to retry.
    if (err.code === Code.FailedPrecondition) return errorHandler(invalid(err.rawMessage), request, reply);
    if (err.code === Code.InvalidArgument && err.rawMessage.startsWith("page_token:"))
      return errorHandler(badCursor(), request, reply);
    const [unavailable] = err.code === Code.Unavailable ? err.findDetails(TargetUnavailableSchema) : [];
    if (unavailable) {
      return errorHandler(
        new HttpError(503, "temporarily_unavailable", unavailable.description, { "retry-after": "5" }),
        request,
        reply,
      );
    }
  }
  return errorHandler(err, request, reply);
}

/**
 * `delivery`: GET (one and the list), PUT and a repeated POST answer each subscription's
 * throttled_until, in_flight_cap, blocked_since and blocked_delivery_id from it
 * (subscription-json.ts: null, and a warning logged, when it cannot answer).
 */
export function subscriptionRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  webhook: Client<typeof WebhookService>,
  delivery: Client<typeof DeliveryService>,
  publicUrl: string,
): void {
  const read = bearer.requireScope("webhooks:read") as onRequestAsyncHookHandler;
  const write = bearer.requireScope("webhooks:write") as onRequestAsyncHookHandler;
  // Creating one: every event type is contact.*, so contacts:read too.
  const writeContacts = bearer.requireScope(["webhooks:write", "contacts:read"]) as onRequestAsyncHookHandler;
  const location = (id: bigint) => `${publicUrl}${SUBSCRIPTIONS_PATH}/${id}`;
  const errorHandlerOption = { errorHandler: subscriptionErrors };

  app.get(
    SUBSCRIPTIONS_PATH,
    { schema: SCHEMAS.list, onRequest: read, ...errorHandlerOption },
    async (request, reply) => {
      const { limit, cursor } = readListQuery(request, LIST_DEFAULT, LIST_MAX);
      const res = await webhook.listSubscriptions(
        { owner: tokenOwner(request), pageSize: limit, pageToken: cursor },
        rpcOptions(request),
      );
      linkNext(reply, publicUrl, SUBSCRIPTIONS_PATH, limit, res.nextPageToken);
      return reply
        .headers(NO_STORE)
        .send(
          await subscriptionsJson(delivery, tokenOwner(request), res.subscriptions, rpcOptions(request), request.log),
        );
    },
  );

  app.post(
    SUBSCRIPTIONS_PATH,
    { schema: SCHEMAS.create, onRequest: writeContacts, preValidation: jsonBody, ...errorHandlerOption },
    async (request, reply) => {
      const fields = fieldsOf(request) as Required<SubscriptionFields>;
      const res = await webhook.createSubscription(
        {
          owner: tokenOwner(request),
          targetUrl: fields.target_url,
          eventType: fields.event_type,
          ordered: fields.ordered ?? false,
        },
        rpcOptions(request),
      );
      const subscription = res.subscription!;
      if (!res.created)
        return reply
          .headers(NO_STORE)
          .send(
            (
              await subscriptionsJson(delivery, tokenOwner(request), [subscription], rpcOptions(request), request.log)
            )[0],
          );
      // The secret, once: it is never shown again.
      return reply
        .status(201)
        .headers(NO_STORE)
        .header("location", location(subscription.id))
        .send({ ...subscriptionJson(subscription), secret: res.secret });
    },
  );

  app.get(
    `${SUBSCRIPTIONS_PATH}/:id`,
    { schema: SCHEMAS.get, onRequest: read, ...errorHandlerOption },
    async (request, reply) => {
      const id = readId(request);
      // Both at once: the delivery state does not wait for the subscription (another pair's ids are left out of its answer).
      const [res, states] = await Promise.all([
        webhook.getSubscription({ owner: tokenOwner(request), id }, rpcOptions(request)),
        deliveryStates(delivery, tokenOwner(request), [id], rpcOptions(request), request.log),
      ]);
      return reply.headers(NO_STORE).send(subscriptionJson(res.subscription!, states.get(id)));
    },
  );

  app.put(
    `${SUBSCRIPTIONS_PATH}/:id`,
    { schema: SCHEMAS.update, onRequest: writeContacts, preValidation: jsonBody, ...errorHandlerOption },
    async (request, reply) => {
      const id = readId(request);
      const fields = fieldsOf(request);
      const res = await webhook.updateSubscription(
        {
          owner: tokenOwner(request),
          id,
          targetUrl: fields.target_url,
          eventType: fields.event_type,
          ordered: fields.ordered,
        },
        rpcOptions(request),
      );
      const [json] = await subscriptionsJson(
        delivery,
        tokenOwner(request),
        [res.subscription!],
        rpcOptions(request),
        request.log,
      );
      return reply.headers(NO_STORE).send(json);
    },
  );

  app.delete(
    `${SUBSCRIPTIONS_PATH}/:id`,
    { schema: SCHEMAS.delete, onRequest: write, ...errorHandlerOption },
    async (request, reply) => {
      await webhook.deleteSubscription(
        { owner: tokenOwner(request), id: readId(request), reason: SubscriptionEndReason.DELETED_BY_OWNER },
        rpcOptions(request),
      );
      return reply.status(204).headers(NO_STORE).send();
    },
  );
}
