// The organisation's tools, as GET /oauth/me and GET /oauth/contacts answer:
// get_organisation, list_contacts (newest first, a cursor to page on) and
// get_contact. Tenancy as REST: the token's organisation, never another's.
import type { Client } from "@connectrpc/connect";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { contactJson } from "../../services/shared/contact-json.js";
import { isUuid } from "../../services/shared/validation.js";
import type { Bearer } from "../bearer.js";
import { LIST_DEFAULT, LIST_MAX } from "../routes/contacts.js";
import { Contact, ContactList, Organisation } from "../schemas/organisation.js";
import { defineTool, toolArguments } from "./define-tool.js";
import { NextCursor, listArguments } from "./list-arguments.js";
import type { ToolContext } from "./tool-results.js";

const READ_ONLY = { readOnlyHint: true, openWorldHint: false };

const ContactId = z
  .string({ error: "id: expected a string" })
  .refine(isUuid, { error: "id: expected a contact id (a UUID, as list_contacts shows)" })
  .describe("The contact's id (a UUID)");

export function organisationTools(
  server: McpServer,
  context: ToolContext,
  bearer: Bearer,
  organisations: Client<typeof OrganisationService>,
): void {
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
    description: `The organisation's contacts, newest first: ${LIST_DEFAULT} by default, at most ${LIST_MAX}; next_cursor reads the next page.`,
    input: toolArguments(listArguments(LIST_DEFAULT, LIST_MAX)),
    output: z.object({ contacts: ContactList, next_cursor: NextCursor }),
    annotations: READ_ONLY,
    async run({ limit, cursor }, { rpc }) {
      const res = await organisations.listContacts(
        { organisationId, pageSize: limit ?? LIST_DEFAULT, pageToken: cursor ?? "" },
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
}
