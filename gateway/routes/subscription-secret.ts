// POST …/subscriptions/{id}/rotate-secret (webhooks:write): a new signing
// secret, shown in this answer only. For WEBHOOK_SECRET_OVERLAP_SECONDS the
// old one signs too (v1,<new> v1,<old>), so the receiver switches at its pace.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { z } from "zod";
import type { FastifyInstance } from "fastify";
import type { ApiDeps } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { HEADERS, IdParam, bearerErrors, error, json, needs } from "../schemas/common.js";
import { SUBSCRIPTIONS_PATH, readIntParam, subscriptionErrors, tokenOwner } from "./subscriptions.js";

const RotatedSecret = z
  .object({
    id: z.number().int().positive().describe("The subscription"),
    secret: z.string().describe("The new signing secret (whsec_…): shown once, in this answer, never again"),
    previous_secret_expires_at: z.iso
      .datetime()
      .nullable()
      .describe(
        "Until when the old secret keeps signing too: each POST carries two signatures (webhook-signature: v1,<new> v1,<old>), so a receiver verifies with either while it switches. null when the old secret stopped at once",
      ),
  })
  .meta({
    id: "RotatedSecret",
    description: "A subscription's new signing secret, and when its old one stops signing",
  });

const rotatedSecretExample = {
  id: 42,
  secret: "whsec_Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5",
  previous_secret_expires_at: "2026-01-16T09:30:00.000Z",
};

/** The answer (the CLI's --json too). */
export type RotatedSecretJson = z.output<typeof RotatedSecret>;

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
  },
};

export function subscriptionSecretRoutes(app: FastifyInstance, { bearer, clients }: ApiDeps): void {
  app.post(
    `${SUBSCRIPTIONS_PATH}/:id/rotate-secret`,
    { schema: SCHEMA, onRequest: bearer.requireScope("webhooks:write"), errorHandler: subscriptionErrors },
    async (request, reply) => {
      const id = readIntParam(request, "id");
      const res = await clients.webhook.rotateSubscriptionSecret(
        { owner: tokenOwner(request), id },
        rpcOptions(request),
      );
      const expires = res.oldSecretExpireTime;
      const body: RotatedSecretJson = {
        id: Number(res.subscription!.id),
        secret: res.secret,
        previous_secret_expires_at: expires ? timestampDate(expires).toISOString() : null,
      };
      return reply.header("cache-control", "no-store").send(body);
    },
  );
}
