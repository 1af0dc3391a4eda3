// Recovering what a subscription missed, scoped like the subscriptions to the
// pair (organisation, client application) of the token:
//
//   POST /oauth/webhooks/subscriptions/{id}/recover   webhooks:write
//   {"since": "<RFC 3339>"}
//
// After an outage of the receiver, one call queues one new attempt for every
// delivery created since then that gave up, was cancelled, or was skipped
// while the subscription was disabled (a failed one still waiting for its
// retry is moved to now), oldest first: 202 with how many. Deliveries that
// succeeded (or whose target answered 410) are not sent again. A disabled
// subscription sends nothing: 409 until a PUT re-enables it. Another pair's
// subscription is 404, as on every subscription route.
import type { Client } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import type { FastifyInstance, onRequestAsyncHookHandler, preValidationAsyncHookHandler } from "fastify";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HttpError } from "../errors.js";
import { DEFAULT_ERROR, HEADERS, IdParam, bearerErrors, error, json, needs } from "../schemas/common.js";
import { RecoverBody, Recovered, recoveredExample } from "../schemas/subscription-recover.js";
import { SUBSCRIPTIONS_PATH, readIntParam, tokenOwner } from "./subscriptions.js";

const NO_STORE = { "cache-control": "no-store" };

/** The answer (the CLI's --json too): the subscription, the since read, how many were queued. */
export interface RecoveredJson {
  subscription_id: number;
  since: string;
  queued: number;
}

const SCHEMA = {
  operationId: "recoverDeliveries",
  summary: "Send again what a subscription missed since a time",
  description:
    "Every delivery of the subscription created at or after since that gave up, was cancelled, or was skipped while the subscription was disabled gets one new attempt " +
    "(a failed one waiting for its retry is sent now), oldest first, in the order the events happened. Deliveries that succeeded, or whose target answered 410, are not sent again. " +
    "The attempts show in the delivery log as they are made.",
  tags: ["Deliveries"],
  security: needs("webhooks:write"),
  consumes: ["application/json"],
  params: z.object({ id: IdParam("id", "The subscription's id") }),
  body: RecoverBody,
  response: {
    202: json("Accepted: this many deliveries are queued", Recovered, recoveredExample, {
      "cache-control": HEADERS.noStore,
    }),
    400: error(
      "The id is not a positive integer, or since is missing, not RFC 3339 or in the future, or the body has another field",
      "invalid_request",
      "since: required (an RFC 3339 date-time, such as 2026-01-15T09:00:00Z)",
    ),
    ...bearerErrors("webhooks:write"),
    404: error("No such subscription of this token's pair", "not_found", "subscription not found"),
    409: error(
      "The subscription is disabled: re-enable it with PUT first",
      "conflict",
      "subscription 42 is disabled: it would be sent nothing; re-enable it first (PUT), then recover",
    ),
    415: error("The body is not application/json", "unsupported_media_type", "send the body as application/json"),
    default: DEFAULT_ERROR,
  },
};

/** The id first (400), then the media type (415), before the body's schema; no body at all is an empty object (since: required). */
const jsonBody: preValidationAsyncHookHandler = async (request) => {
  readIntParam(request, "id");
  if (request.body === undefined && request.headers["content-type"] === undefined) {
    request.body = {};
    return;
  }
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpError(415, "unsupported_media_type", "send the body as application/json");
};

export function subscriptionRecoverRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  delivery: Client<typeof DeliveryService>,
): void {
  const write = bearer.requireScope("webhooks:write") as onRequestAsyncHookHandler;

  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/recover`,
    { schema: SCHEMA, onRequest: write, preValidation: jsonBody },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const since = new Date((request.body as { since: string }).since);
      const owner = tokenOwner(request);
      // The delivery service checks the subscription (404 another pair's, 409 disabled, 400 a since in the future).
      const res = await delivery.recoverDeliveries(
        { owner, subscriptionId: id, since: timestampFromDate(since) },
        rpcOptions(request),
      );
      const body: RecoveredJson = { subscription_id: Number(id), since: since.toISOString(), queued: res.queuedCount };
      return reply.status(202).headers(NO_STORE).send(body);
    },
  );
}
