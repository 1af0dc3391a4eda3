// The headers a call carries both ways on the unary path: a caller's, in
// whatever form connect's options take them, arrive as Web Headers would
// keep them (the client copies the plain object every caller here passes
// without making a Web Headers); an interceptor's own answer has its headers
// sent beside the handler's (the lean server's call objects, served-call.ts).
// No database. Behaviour only, never timing.
import { Writable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import { GetOrganisationRequestSchema, OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { createLogger } from "../services/shared/logger.js";
import { createRpcClient, serveInProcess } from "../services/shared/rpc/client.js";
import { invokeInProcess, unaryRoutes } from "../services/shared/rpc/lean-server.js";
import { startRpcServer, type RunningServer } from "../services/shared/rpc/server.js";

const TOKEN = "r".repeat(40);
const ORG_ID = "7c4f5d0e-1111-4222-8333-444455556666";

describe("a call's headers", () => {
  const servers: RunningServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });
  const quiet = () =>
    new Writable({
      write(_chunk, _enc, done) {
        done();
      },
    });

  it("sends a caller's headers as Web Headers would, whatever form they are given in", async () => {
    const server = await startRpcServer({
      name: "caller-headers",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("caller-headers", "info", quiet()),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          getOrganisation(req, ctx) {
            return { organisation: { id: req.id, name: JSON.stringify([ctx.requestHeader.get("x-a"), ctx.requestHeader.get("x-b")]) } };
          },
        }),
    });
    servers.push(server);
    const overHttp = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
    const undo = serveInProcess(server.url, server.inProcess);
    try {
      const inMemory = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
      for (const client of [overHttp, inMemory]) {
        const seen = async (headers: ConstructorParameters<typeof Headers>[0]) => (await client.getOrganisation({ id: ORG_ID }, { headers })).organisation?.name;
        expect(await seen({ "x-a": "plain", "x-b": "" })).toBe(JSON.stringify(["plain", ""]));
        // Names are case-insensitive and values trimmed, as Web Headers keeps them.
        expect(await seen({ "X-A": "  padded\t", "x-b": "in ner" })).toBe(JSON.stringify(["padded", "in ner"]));
        expect(await seen([["X-A", "listed"]])).toBe(JSON.stringify(["listed", null]));
        expect(await seen(new Headers({ "x-b": "web" }))).toBe(JSON.stringify([null, "web"]));
        // A value Web Headers refuses is refused before anything is sent.
        await expect(client.getOrganisation({ id: ORG_ID }, { headers: { "x-a": "line\nbreak" } })).rejects.toThrow(TypeError);
        await expect(client.getOrganisation({ id: ORG_ID }, { headers: { "x a": "space in the name" } })).rejects.toThrow(TypeError);
      }
    } finally {
      undo();
    }
  });

  it("sends the headers of an interceptor that answers with an object of its own, beside the handler's", async () => {
    const routes = unaryRoutes((router) =>
      router.service(OrganisationService, {
        getOrganisation(req, ctx) {
          ctx.responseHeader.set("x-answered-by", "handler");
          ctx.responseTrailer.set("x-rows", "1");
          return { organisation: { id: req.id, name: `${ctx.requestHeader.get("x-asked-by")} ${ctx.method.name}` } };
        },
      }),
    );
    const route = routes.get(`/${OrganisationService.typeName}/GetOrganisation`)!;
    const own: Interceptor = (next) => async (req) => {
      const res = await next(req);
      return { ...res, header: new Headers({ "x-interceptor": "yes" }), trailer: new Headers({ "x-checked": "2" }) } as typeof res;
    };
    const input = create(GetOrganisationRequestSchema, { id: ORG_ID });
    const answer = await invokeInProcess(route, { "x-asked-by": "caller" }, "http://in-memory/x", input, [own], () => undefined);
    expect(answer.status).toBe(200);
    expect(answer.headers).toEqual({ "x-answered-by": "handler", "x-interceptor": "yes", "trailer-x-rows": "1", "trailer-x-checked": "2" });
    expect("message" in answer && answer.message).toMatchObject({ organisation: { id: ORG_ID, name: "caller GetOrganisation" } });
  });
});
