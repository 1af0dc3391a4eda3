// The webhook subscription tools, as /oauth/webhooks/subscriptions answers:
// list_webhook_subscriptions, create_webhook_subscription (idempotent: the
// same target_url and event_type again is the existing subscription, without
// its secret) and delete_webhook_subscription. Tenancy as REST: the pair
// (organisation, client application) of the token.
import type { Client } from "@connectrpc/connect";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { SubscriptionEndReason, type WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { eventTypeOf } from "../../services/shared/event-types.js";
import { subscriptionJson, subscriptionsJson } from "../routes/subscription-json.js";
import { LIST_DEFAULT, LIST_MAX } from "../routes/subscription-route-schemas.js";
import {
  CreateSubscriptionBody,
  Subscription,
  SubscriptionCreated,
  SubscriptionList,
} from "../schemas/subscriptions.js";
import { defineTool, toolArguments } from "./define-tool.js";
import { NextCursor, listArguments } from "./list-arguments.js";
import type { ToolContext } from "./tool-results.js";

/** The id as the representation has it (a number), refused in the words of the REST path's {id}. */
const badId = (iss: { input?: unknown }) =>
  `id: expected a positive integer, not ${JSON.stringify(iss.input)?.slice(0, 40) ?? "nothing"}`;
const SubscriptionId = z
  .int({ error: badId })
  .positive({ error: badId })
  .describe("The subscription's id, as list_webhook_subscriptions shows it");

/** `delivery`: each listed subscription's throttled_until, in_flight_cap, blocked_since and blocked_delivery_id, as REST (null when it cannot answer). */
export function webhookTools(
  server: McpServer,
  context: ToolContext,
  webhook: Client<typeof WebhookService>,
  delivery: Client<typeof DeliveryService>,
): void {
  const owner = { organisationId: context.principal.organisationId, clientId: context.principal.clientId };

  defineTool(server, context, "list_webhook_subscriptions", {
    title: "List webhook subscriptions",
    description: `This application's webhook subscriptions in the organisation, newest first: ${LIST_DEFAULT} by default, at most ${LIST_MAX}; next_cursor reads the next page.`,
    input: toolArguments(listArguments(LIST_DEFAULT, LIST_MAX)),
    output: z.object({ subscriptions: SubscriptionList, next_cursor: NextCursor }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async run({ limit, cursor }, { rpc }) {
      const res = await webhook.listSubscriptions(
        { owner, pageSize: limit ?? LIST_DEFAULT, pageToken: cursor ?? "" },
        rpc,
      );
      const subscriptions = await subscriptionsJson(delivery, owner, res.subscriptions, rpc, context.log);
      return { subscriptions, next_cursor: res.nextPageToken || null };
    },
  });

  defineTool(server, context, "create_webhook_subscription", {
    title: "Create a webhook subscription",
    description:
      "Subscribes an https target_url to an event type. The signing secret is in the answer of the call that creates it, never again; the same target_url and event_type again answers the existing subscription (created: false, no secret).",
    input: toolArguments({
      target_url: CreateSubscriptionBody.shape.target_url.describe(Subscription.shape.target_url.description ?? ""),
      event_type: CreateSubscriptionBody.shape.event_type.describe("The event the target receives"),
    }),
    output: z.object({
      created: z.boolean().describe("false: the subscription existed already"),
      subscription: Subscription.extend({ secret: SubscriptionCreated.shape.secret.optional() }),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async run({ target_url, event_type }, { rpc }) {
      // Both are required by the create body's schema (its type also covers the update's).
      const res = await webhook.createSubscription(
        { owner, targetUrl: target_url!, eventType: eventTypeOf(event_type!) },
        rpc,
      );
      const subscription = subscriptionJson(res.subscription!);
      return {
        created: res.created,
        subscription: res.created ? { ...subscription, secret: res.secret } : subscription,
      };
    },
  });

  defineTool(server, context, "delete_webhook_subscription", {
    title: "Delete a webhook subscription",
    description: "Deletes one of this application's subscriptions: its target gets no more events.",
    input: toolArguments({ id: SubscriptionId }),
    output: z.object({ deleted: z.literal(true), id: SubscriptionId }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async run({ id }, { rpc }) {
      await webhook.deleteSubscription({ owner, id: BigInt(id), reason: SubscriptionEndReason.DELETED_BY_OWNER }, rpc);
      return { deleted: true as const, id };
    },
  });
}
