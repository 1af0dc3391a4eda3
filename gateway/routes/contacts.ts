// GET /oauth/contacts?limit=&cursor= (scope contacts:read): the token's
// organisation's most recent contacts, newest first, as a bare JSON array in
// exactly the representation contact events carry in `data`
// (services/shared/contact-json.ts). Integration platforms use it for sample
// data when a user sets up a trigger, and for polling. `limit` defaults to 10
// (a sample), at most 100; a Link header (rel="next") pages further.
import type { Client } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, onRequestAsyncHookHandler } from "fastify";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { contactJson } from "../../services/shared/contact-json.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { badCursor, linkNext, readListQuery } from "../list-paging.js";
import { DEFAULT_ERROR, HEADERS, ListQuery, bearerErrors, error, json, needs } from "../schemas/common.js";
import { ContactList, contactExample } from "../schemas/organisation.js";

export const CONTACTS_PATH = "/oauth/contacts";
export const LIST_DEFAULT = 10;
export const LIST_MAX = 100;

const SCHEMA = {
  operationId: "listContacts",
  summary: "The organisation's most recent contacts",
  description:
    "Newest first, in exactly the representation contact events carry in `data`: sample data for a trigger's setup, and polling.",
  tags: ["Organisation"],
  security: needs("contacts:read"),
  querystring: ListQuery(LIST_DEFAULT, LIST_MAX),
  response: {
    200: json("One page of contacts", ContactList, [contactExample], {
      "cache-control": HEADERS.noStore,
      link: HEADERS.link,
    }),
    400: error("limit or cursor is not valid", "invalid_request", "limit: expected a whole number from 1 to 100"),
    ...bearerErrors("contacts:read"),
    default: DEFAULT_ERROR,
  },
};

export function contactRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  organisations: Client<typeof OrganisationService>,
  publicUrl: string,
): void {
  const onRequest = bearer.requireScope("contacts:read") as onRequestAsyncHookHandler;
  app.get(CONTACTS_PATH, { schema: SCHEMA, onRequest }, async (request, reply) => {
    const { limit, cursor } = readListQuery(request, LIST_DEFAULT, LIST_MAX);
    const organisationId = request.bearer!.organisationId;
    let res;
    try {
      res = await organisations.listContacts(
        { organisationId, pageSize: limit, pageToken: cursor },
        rpcOptions(request),
      );
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.InvalidArgument && err.rawMessage.startsWith("page_token:"))
        throw badCursor();
      throw err;
    }
    linkNext(reply, publicUrl, CONTACTS_PATH, limit, res.nextPageToken);
    return reply.header("cache-control", "no-store").send(res.contacts.map(contactJson));
  });
}
