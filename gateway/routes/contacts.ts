// GET /oauth/contacts (contacts:read): the organisation's contacts, newest
// first, as contact events carry them in `data`: sample data for a trigger's
// setup, and polling.
import type { FastifyInstance } from "fastify";
import { contactJson } from "../../services/shared/contact-json.js";
import type { ApiDeps } from "../bearer.js";
import { rpcOptions } from "../clients.js";
import { linkNext, readListQuery } from "../list-paging.js";
import { HEADERS, ListQuery, bearerErrors, error, json, needs } from "../schemas/common.js";
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
  },
};

export function contactRoutes(app: FastifyInstance, { bearer, clients, issuer }: ApiDeps): void {
  const onRequest = bearer.requireScope("contacts:read");
  app.get(CONTACTS_PATH, { schema: SCHEMA, onRequest }, async (request, reply) => {
    const { limit, cursor } = readListQuery(request, LIST_DEFAULT);
    const res = await clients.organisation.listContacts(
      { organisationId: request.bearer!.organisationId, pageSize: limit, pageToken: cursor },
      rpcOptions(request),
    );
    linkNext(reply, issuer, CONTACTS_PATH, limit, res.nextPageToken);
    return reply.header("cache-control", "no-store").send(res.contacts.map(contactJson));
  });
}
