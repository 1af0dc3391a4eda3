// Rotating a subscription's signing secret, scoped like the subscriptions to
// the pair (organisation, client application) of the token:
//
//   POST /oauth/webhooks/subscriptions/{id}/rotate-secret   webhooks:write
//
// 200 with the new secret (shown in this answer only) and when the old one
// stops signing: for WEBHOOK_SECRET_OVERLAP_SECONDS every POST carries both
// signatures (v1,<new> v1,<old>), so the receiver can switch to the new
// secret at its pace; null when the overlap is 0. Another pair's
// subscription is 404, as on every subscription route. No body is read.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { z } from "zod";
import type { FastifyInstance, onRequestAsyncHookHandler } from "fastify";
import type { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { DEFAULT_ERROR, HEADERS, IdParam, bearerErrors, error, json, needs } from "../schemas/common.js";
import { RotatedSecret, rotatedSecretExample } from "../schemas/subscription-secret.js";
import { SUBSCRIPTIONS_PATH, readIntParam, subscriptionErrors, tokenOwner } from "./subscriptions.js";

const NO_STORE = { "cache-control": "no-store" };

/** The answer: the subscription, its new secret, and until when the old one signs (null: it stopped). */
export interface RotatedSecretJson {
  id: number;
  secret: string;
  previous_secret_expires_at: string | null;
}

const SCHEMA = {
  operationId: "rotateSubscriptionSecret",
  summary: "Give a subscription a new signing secret",
  description:
    "The new secret signs every POST from now on. The old one keeps signing too until previous_secret_expires_at " +
    "(webhook-signature then carries both: v1,<new> v1,<old>, as Standard Webhooks allows), so a receiver verifies with either while it switches; " +
    "a secret replaced by an earlier rotation stops at once.",
  tags: ["Webhook subscriptions"],
  security: needs("webhooks:write"),
  params: z.object({ id: IdParam("id", "The subscription's id") }),
  response: {
    200: json("The new secret, in this answer only", RotatedSecret, rotatedSecretExample, {
      "cache-control": HEADERS.noStore,
    }),
    400: error("The id is not a positive integer", "invalid_request", 'id: expected a positive integer, not "abc"'),
    ...bearerErrors("webhooks:write"),
    404: error("No such subscription of this token's pair", "not_found", "subscription 42 not found"),
    default: DEFAULT_ERROR,
  },
};

export function subscriptionSecretRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  webhook: Client<typeof WebhookService>,
): void {
  const write = bearer.requireScope("webhooks:write") as onRequestAsyncHookHandler;

  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/rotate-secret`,
    { schema: SCHEMA, onRequest: write, errorHandler: subscriptionErrors },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const owner = tokenOwner(request);
      const res = await webhook.rotateSubscriptionSecret({ owner, id }, rpcOptions(request));
      const body: RotatedSecretJson = {
        id: Number(res.subscription!.id),
        secret: res.secret,
        previous_secret_expires_at: res.oldSecretExpireTime
          ? timestampDate(res.oldSecretExpireTime).toISOString()
          : null,
      };
      return reply.headers(NO_STORE).send(body);
    },
  );
}
