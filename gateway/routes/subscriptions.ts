// REST Hooks subscriptions, scoped to the (organisation, client application)
// pair of the access token. Creating or changing one needs contacts:read too
// (every event is a contact.* one); any PUT re-enables a disabled one. The
// token is checked in onRequest: without one, the body is never parsed.
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest, preValidationAsyncHookHandler } from "fastify";
import type { Subscription } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { SubscriptionEndReason, TargetUnavailableSchema } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeOf } from "../../services/shared/event-types.js";
import type { ApiDeps } from "../bearer.js";
import { requireJson } from "../body-parsers.js";
import { rpcOptions } from "../clients.js";
import { HttpError, errorHandler } from "../errors.js";
import { linkNext, readListQuery } from "../list-paging.js";
import { deliveryStates, subscriptionJson, subscriptionsJson } from "./subscription-json.js";
import { LIST_DEFAULT, SCHEMAS } from "./subscription-route-schemas.js";

export const SUBSCRIPTIONS_PATH = "/oauth/webhooks/subscriptions";

/** Whose subscriptions a request may touch: the pair (organisation, client application) of its token. */
export const tokenOwner = (request: FastifyRequest) => ({
  organisationId: request.bearer!.organisationId,
  clientId: request.bearer!.clientId,
});

const INT64_MAX = 2n ** 63n - 1n;

/** A path parameter that is a positive integer (an int64 identity), else 400 naming it. */
export function readIntParam(request: FastifyRequest, name: string): bigint {
  const text = (request.params as Record<string, string>)[name] ?? "";
  const id = /^[1-9][0-9]{0,18}$/.test(text) ? BigInt(text) : 0n;
  if (id > 0n && id <= INT64_MAX) return id;
  const description = `${name}: expected a positive integer, not ${JSON.stringify(text.slice(0, 40))}`;
  throw new HttpError(400, "invalid_request", description);
}

/** Before the body's schema: 400 for a bad id, then 415 for a body not JSON; no body is an empty object. */
export const jsonBody =
  (what: string): preValidationAsyncHookHandler =>
  async (request) => {
    if ((request.params as Record<string, string>).id !== undefined) readIntParam(request, "id");
    if (request.body === undefined && request.headers["content-type"] === undefined) request.body = {};
    else requireJson(request, what);
  };

export function subscriptionErrors(err: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return errorHandler(subscriptionError(err), request, reply);
}

function subscriptionError(err: unknown): unknown {
  if (!(err instanceof ConnectError)) return err;
  // The pair's cap (WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR): a clear 400, not a conflict to retry.
  if (err.code === Code.FailedPrecondition) return new HttpError(400, "invalid_request", err.rawMessage);
  const [unavailable] = err.code === Code.Unavailable ? err.findDetails(TargetUnavailableSchema) : [];
  return unavailable
    ? new HttpError(503, "temporarily_unavailable", unavailable.description, { "retry-after": "5" })
    : err;
}

function fieldsOf(request: FastifyRequest) {
  const body = request.body as { target_url?: string; event_type?: string; ordered?: boolean };
  return {
    targetUrl: body.target_url,
    eventType: body.event_type === undefined ? undefined : eventTypeOf(body.event_type),
    ordered: body.ordered,
  };
}

/** GET, PUT and a repeated POST answer each subscription's delivery state too (subscription-json.ts). */
export function subscriptionRoutes(app: FastifyInstance, { bearer, clients, issuer }: ApiDeps): void {
  const { webhook, delivery } = clients;
  const read = bearer.requireScope("webhooks:read");
  // Every event type is contact.*, so contacts:read too.
  const writeContacts = bearer.requireScope(["webhooks:write", "contacts:read"]);
  const errors = { errorHandler: subscriptionErrors };
  const withState = async (request: FastifyRequest, subscriptions: Subscription[]) =>
    subscriptionsJson(delivery, tokenOwner(request), subscriptions, rpcOptions(request), request.log);
  const body = jsonBody("the subscription");

  app.get(SUBSCRIPTIONS_PATH, { schema: SCHEMAS.list, onRequest: read, ...errors }, async (request, reply) => {
    const { limit, cursor } = readListQuery(request, LIST_DEFAULT);
    const res = await webhook.listSubscriptions(
      { owner: tokenOwner(request), pageSize: limit, pageToken: cursor },
      rpcOptions(request),
    );
    linkNext(reply, issuer, SUBSCRIPTIONS_PATH, limit, res.nextPageToken);
    return reply.header("cache-control", "no-store").send(await withState(request, res.subscriptions));
  });

  app.post(
    SUBSCRIPTIONS_PATH,
    { schema: SCHEMAS.create, onRequest: writeContacts, preValidation: body, ...errors },
    async (request, reply) => {
      const { targetUrl, eventType, ordered } = fieldsOf(request);
      const res = await webhook.createSubscription(
        { owner: tokenOwner(request), targetUrl: targetUrl!, eventType: eventType!, ordered: ordered ?? false },
        rpcOptions(request),
      );
      const subscription = res.subscription!;
      reply.header("cache-control", "no-store");
      if (!res.created) return reply.send((await withState(request, [subscription]))[0]);
      // The secret, once: it is never shown again.
      return reply
        .status(201)
        .header("location", `${issuer}${SUBSCRIPTIONS_PATH}/${subscription.id}`)
        .send({ ...subscriptionJson(subscription), secret: res.secret });
    },
  );

  app.get(`${SUBSCRIPTIONS_PATH}/:id`, { schema: SCHEMAS.get, onRequest: read, ...errors }, async (request, reply) => {
    const id = readIntParam(request, "id");
    // Both at once: the delivery state leaves out another pair's ids.
    const [res, states] = await Promise.all([
      webhook.getSubscription({ owner: tokenOwner(request), id }, rpcOptions(request)),
      deliveryStates(delivery, tokenOwner(request), [id], rpcOptions(request), request.log),
    ]);
    return reply.header("cache-control", "no-store").send(subscriptionJson(res.subscription!, states.get(id)));
  });

  app.put(
    `${SUBSCRIPTIONS_PATH}/:id`,
    { schema: SCHEMAS.update, onRequest: writeContacts, preValidation: body, ...errors },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const res = await webhook.updateSubscription(
        { owner: tokenOwner(request), id, ...fieldsOf(request) },
        rpcOptions(request),
      );
      return reply.header("cache-control", "no-store").send((await withState(request, [res.subscription!]))[0]);
    },
  );

  app.delete(
    `${SUBSCRIPTIONS_PATH}/:id`,
    { schema: SCHEMAS.delete, onRequest: bearer.requireScope("webhooks:write"), ...errors },
    async (request, reply) => {
      await webhook.deleteSubscription(
        { owner: tokenOwner(request), id: readIntParam(request, "id"), reason: SubscriptionEndReason.DELETED_BY_OWNER },
        rpcOptions(request),
      );
      return reply.status(204).header("cache-control", "no-store").send();
    },
  );
}
