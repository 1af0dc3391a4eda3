// The MCP server of one request (the endpoint is stateless): the platform's
// tools, each answering as its REST route does, with the same tenancy.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { SubscriptionEndReason } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { contactJson } from "../../services/shared/contact-json.js";
import { eventTypeOf } from "../../services/shared/event-types.js";
import { isUuid } from "../../services/shared/validation.js";
import type { ApiDeps } from "../bearer.js";
import { LIST_DEFAULT as CONTACTS_DEFAULT, LIST_MAX as CONTACTS_MAX } from "../routes/contacts.js";
import { subscriptionJson, subscriptionsJson } from "../routes/subscription-json.js";
import { LIST_DEFAULT, LIST_MAX } from "../routes/subscription-route-schemas.js";
import { Contact, ContactList, Organisation } from "../schemas/organisation.js";
import {
  CreateSubscriptionBody,
  Subscription,
  SubscriptionCreated,
  SubscriptionList,
} from "../schemas/subscriptions.js";
import { NextCursor, defineTool, listArguments, toolArguments, type ToolContext } from "./define-tool.js";

const INSTRUCTIONS =
  "Tools of one bizcard organisation (the one this connection was authorised for): its contacts and this application's webhook subscriptions.";

const READ_ONLY = { readOnlyHint: true, openWorldHint: false };

const ContactId = z
  .string({ error: "id: expected a string" })
  .refine(isUuid, { error: "id: expected a contact id (a UUID, as list_contacts shows)" })
  .describe("The contact's id (a UUID)");

/** The id as the representation has it (a number), refused in the words of the REST path's {id}. */
const badId = (iss: { input?: unknown }) =>
  `id: expected a positive integer, not ${JSON.stringify(iss.input)?.slice(0, 40) ?? "nothing"}`;
const SubscriptionId = z
  .int({ error: badId })
  .positive({ error: badId })
  .describe("The subscription's id, as list_webhook_subscriptions shows it");

/** `version`: the platform's (package.json), as the server's implementation version. */
export function createMcpServer({ bearer, clients, version }: ApiDeps & { version: string }, context: ToolContext) {
  const server = new McpServer(
    { name: "bizcard", version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  const { organisation: organisations, webhook, delivery } = clients;
  const organisationId = context.principal.organisationId;

  defineTool(server, context, "get_organisation", {
    title: "Organisation",
    description: "The organisation this connection acts for: its id and name.",
    input: toolArguments({}),
    // The shape, not the named schema: a tool's outputSchema must be an object schema itself, not a $ref.
    output: z.object(Organisation.shape),
    annotations: READ_ONLY,
    async run(_args, { principal, rpc }) {
      const organisation = await bearer.organisation(principal, async (id) => {
        const res = await organisations.getOrganisation({ id }, rpc);
        return { id: res.organisation!.id, name: res.organisation!.name };
      });
      return { id: organisation.id, name: organisation.name };
    },
  });

  defineTool(server, context, "list_contacts", {
    title: "List contacts",
    description: `The organisation's contacts, newest first: ${CONTACTS_DEFAULT} by default, at most ${CONTACTS_MAX}; next_cursor reads the next page.`,
    input: toolArguments(listArguments(CONTACTS_DEFAULT, CONTACTS_MAX)),
    output: z.object({ contacts: ContactList, next_cursor: NextCursor }),
    annotations: READ_ONLY,
    async run({ limit, cursor }, { rpc }) {
      const res = await organisations.listContacts(
        { organisationId, pageSize: limit ?? CONTACTS_DEFAULT, pageToken: cursor ?? "" },
        rpc,
      );
      return { contacts: res.contacts.map(contactJson), next_cursor: res.nextPageToken || null };
    },
  });

  defineTool(server, context, "get_contact", {
    title: "Contact",
    description: "One of the organisation's contacts, by id.",
    input: toolArguments({ id: ContactId }),
    output: z.object(Contact.shape),
    annotations: READ_ONLY,
    async run({ id }, { rpc }) {
      const res = await organisations.getContact({ id, organisationId }, rpc);
      return contactJson(res.contact!);
    },
  });

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
  return server;
}
