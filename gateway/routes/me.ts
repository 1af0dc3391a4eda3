// GET /oauth/me (organisation:read): the token's organisation, {"id", "name"}.
// The organisation is loaded once per cached bearer check and its JSON written
// once with it, so a repeated call makes no RPC and is sent as it is.
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ApiDeps } from "../bearer.js";
import type { PrincipalOrganisation } from "../bearer-cache.js";
import { rpcOptions } from "../clients.js";
import { HEADERS, bearerErrors, json, needs } from "../schemas/common.js";
import { Organisation } from "../schemas/organisation.js";

const SCHEMA = {
  operationId: "getMe",
  summary: "The token's organisation",
  description: "Its id and name; integration platforms show the name as the connection's label.",
  tags: ["Organisation"],
  security: needs("organisation:read"),
  response: {
    200: json(
      "The organisation",
      Organisation,
      { id: "9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a", name: "Acme Ltd" },
      { "cache-control": HEADERS.noStore },
    ),
    ...bearerErrors("organisation:read"),
  },
};

export function meRoutes(app: FastifyInstance, { bearer, clients }: ApiDeps): void {
  // A string with a JSON content type is sent as it is (fastify serializes only objects).
  const answer = (reply: FastifyReply, organisation: PrincipalOrganisation) =>
    reply
      .header("cache-control", "no-store")
      .header("content-type", "application/json; charset=utf-8")
      .send(organisation.json);
  // Not an async handler: a repeated call is answered without a promise.
  app.get("/oauth/me", { schema: SCHEMA, preHandler: bearer.requireScope("organisation:read") }, (request, reply) => {
    const principal = request.bearer!;
    if (principal.organisationLoaded) return answer(reply, principal.organisationLoaded);
    return bearer
      .organisation(principal, async (id) => {
        const { organisation } = await clients.organisation.getOrganisation({ id }, rpcOptions(request));
        return { id: organisation!.id, name: organisation!.name };
      })
      .then((organisation) => answer(reply, organisation));
  });
}
