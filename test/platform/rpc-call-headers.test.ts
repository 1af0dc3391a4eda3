// The headers a caller gives a call, in whatever form connect's options take
// them, arrive as Web Headers keep them, over HTTP and in memory alike. No
// database. Behaviour only, never timing.
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient, serveInProcess } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";

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
            return {
              organisation: {
                id: req.id,
                name: JSON.stringify([ctx.requestHeader.get("x-a"), ctx.requestHeader.get("x-b")]),
              },
            };
          },
        }),
    });
    servers.push(server);
    const overHttp = createRpcClient(OrganisationService, {
      baseUrl: server.url,
      timeoutMs: 5000,
      internalToken: TOKEN,
    });
    const undo = serveInProcess(server.url, server.inProcess);
    try {
      const inMemory = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 5000,
        internalToken: TOKEN,
      });
      for (const client of [overHttp, inMemory]) {
        const seen = async (headers: ConstructorParameters<typeof Headers>[0]) =>
          (await client.getOrganisation({ id: ORG_ID }, { headers })).organisation?.name;
        expect(await seen({ "x-a": "plain", "x-b": "" })).toBe(JSON.stringify(["plain", ""]));
        // Names are case-insensitive and values trimmed, as Web Headers keeps them.
        expect(await seen({ "X-A": "  padded\t", "x-b": "in ner" })).toBe(JSON.stringify(["padded", "in ner"]));
        expect(await seen([["X-A", "listed"]])).toBe(JSON.stringify(["listed", null]));
        expect(await seen(new Headers({ "x-b": "web" }))).toBe(JSON.stringify([null, "web"]));
        // A value Web Headers refuses is refused before anything is sent.
        await expect(client.getOrganisation({ id: ORG_ID }, { headers: { "x-a": "line\nbreak" } })).rejects.toThrow(
          TypeError,
        );
        await expect(
          client.getOrganisation({ id: ORG_ID }, { headers: { "x a": "space in the name" } }),
        ).rejects.toThrow(TypeError);
      }
    } finally {
      undo();
    }
  });
});
