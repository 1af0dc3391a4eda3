// GET /oauth/me (scope organisation:read): the token's organisation, {"id",
// "name"}; integration platforms show the name as the connection's label.
// The name is loaded once per cached bearer check (bearer.ts), so a repeated
// call makes no RPC at all.
import type { Client } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { Bearer } from "../bearer.js";
import { rpcOptions } from "../clients.js";

export function meRoutes(app: FastifyInstance, bearer: Bearer, organisations: Client<typeof OrganisationService>): void {
  app.get("/oauth/me", { preHandler: bearer.requireScope("organisation:read") }, async (request, reply) => {
    const principal = request.bearer!;
    const organisation = await bearer.organisation(principal, async (id) => {
      const res = await organisations.getOrganisation({ id }, rpcOptions(request));
      return { id: res.organisation!.id, name: res.organisation!.name };
    });
    return reply.header("cache-control", "no-store").send({ id: organisation.id, name: organisation.name });
  });
}
