// POST …/subscriptions/{id}/recover {"since"} (webhooks:write): after a
// receiver's outage, one new attempt for every delivery since then that gave
// up, was cancelled or skipped, oldest first; 202 with how many.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import type { FastifyInstance } from "fastify";
import type { ApiDeps } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HEADERS, IdParam, bearerErrors, error, json, needs } from "../schemas/common.js";
import { RecoverBody, Recovered, recoveredExample } from "../schemas/subscription-recover.js";
import { SUBSCRIPTIONS_PATH, jsonBody, readIntParam, tokenOwner } from "./subscriptions.js";

/** The answer (the CLI's --json too): the subscription, the since read, how many were queued. */
export type RecoveredJson = z.output<typeof Recovered>;

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
  },
};

export function subscriptionRecoverRoutes(app: FastifyInstance, { bearer, clients }: ApiDeps): void {
  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/recover`,
    { schema: SCHEMA, onRequest: bearer.requireScope("webhooks:write"), preValidation: jsonBody("the body") },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const since = new Date((request.body as { since: string }).since);
      const res = await clients.delivery.recoverDeliveries(
        { owner: tokenOwner(request), subscriptionId: id, since: timestampFromDate(since) },
        rpcOptions(request),
      );
      const body: RecoveredJson = { subscription_id: Number(id), since: since.toISOString(), queued: res.queuedCount };
      return reply.status(202).header("cache-control", "no-store").send(body);
    },
  );
}
