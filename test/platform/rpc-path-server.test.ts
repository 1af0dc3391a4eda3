// The RPC server's side of the path between services: services of one
// process calling each other in memory, and how a call is served (request ids
// carried downstream, headers, trailers and deadlines, JSON and errors). What
// it logs per call: rpc-server-logs.test.ts. No database. Behaviour only,
// never timing.
import { Writable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import {
  GetOrganisationRequestSchema,
  OrganisationSchema,
  OrganisationService,
} from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient, serveInProcess } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "r".repeat(40);
const ORG_ID = "7c4f5d0e-1111-4222-8333-444455556666";

describe("services of one process", () => {
  it("call each other in memory, through the same credential check and request id, once offered", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n"))
          if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const server = await startRpcServer({
      name: "in-process",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("in-process", "debug", sink),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          getOrganisation: (req) => ({ organisation: { id: req.id, name: "In memory" } }),
        }),
    });
    const client = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
    const intruder = createRpcClient(OrganisationService, {
      baseUrl: server.url,
      timeoutMs: 5000,
      internalToken: "x".repeat(40),
    });
    expect((await client.getOrganisation({ id: ORG_ID })).organisation?.name).toBe("In memory");
    const undo = serveInProcess(server.url, server.inProcess);
    // The port closes: what still answers is the in-memory path.
    await server.close();
    try {
      lines.length = 0;
      const res = await client.getOrganisation({ id: ORG_ID }, { headers: { "x-request-id": "mem-1" } });
      expect(res.organisation?.name).toBe("In memory");
      expect(lines.filter((l) => l.msg === "rpc")).toMatchObject([{ code: "ok", requestId: "mem-1" }]);
      expect((await rpcError(intruder.getOrganisation({ id: ORG_ID }))).code).toBe(Code.Unauthenticated);
      expect((await rpcError(client.listContacts({ organisationId: ORG_ID }))).code).toBe(Code.Unimplemented);
    } finally {
      undo();
    }
    // Withdrawn, the client goes over HTTP again, where nothing listens any more.
    expect((await rpcError(client.getOrganisation({ id: ORG_ID }))).code).toBe(Code.Unavailable);
  });

  it("in memory, hand each side a copy of the other's message, and an error as it would come over HTTP", async () => {
    // A handler that keeps its answer (a cache would) and changes the request it was given.
    const kept = create(OrganisationSchema, { id: ORG_ID, name: "Kept" });
    let seen: { id: string } | undefined;
    const server = await startRpcServer({
      name: "copies",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("copies", "silent"),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          getOrganisation(req) {
            if (req.id === "fault")
              throw new ConnectError(
                "could not read",
                Code.Internal,
                { "x-why": "test" },
                undefined,
                new Error("database went away"),
              );
            // A lone surrogate in an answer: it arrives as over HTTP, as U+FFFD.
            if (req.id === "lone") return { organisation: { id: ORG_ID, name: "Half\uD800" } };
            seen = req;
            req.id = "changed by the handler";
            return { organisation: kept };
          },
        }),
    });
    const undo = serveInProcess(server.url, server.inProcess);
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 5000,
        internalToken: TOKEN,
      });
      const request = create(GetOrganisationRequestSchema, { id: ORG_ID });
      const first = await client.getOrganisation(request);
      expect(request.id).toBe(ORG_ID);
      expect(seen).not.toBe(request);
      expect(first.organisation).toEqual(kept);
      expect(first.organisation).not.toBe(kept);
      first.organisation!.name = "changed by the caller";
      expect(kept.name).toBe("Kept");
      expect((await client.getOrganisation({ id: ORG_ID })).organisation?.name).toBe("Kept");
      // The cause stays inside; code, message and metadata arrive.
      const err = await rpcError(client.getOrganisation({ id: "fault" }));
      expect(err).toMatchObject({ code: Code.Internal, rawMessage: "could not read" });
      expect(err.cause).toBeUndefined();
      expect(err.metadata.get("x-why")).toBe("test");
      expect((await client.getOrganisation({ id: "lone" })).organisation?.name).toBe("Half\uFFFD");
      undo();
      expect((await client.getOrganisation({ id: "lone" })).organisation?.name).toBe("Half\uFFFD");
    } finally {
      undo();
      await server.close();
    }
  });
});

describe("a unary call, served", () => {
  const servers: RunningServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });
  const logSink = (lines: Record<string, unknown>[]) =>
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n"))
          if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });

  it("carries the request id of the call being served into the calls its handler makes", async () => {
    const downstreamLines: Record<string, unknown>[] = [];
    const downstream = await startRpcServer({
      name: "downstream",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("downstream", "debug", logSink(downstreamLines)),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          getOrganisation: (req) => ({ organisation: { id: req.id, name: "Downstream" } }),
        }),
    });
    servers.push(downstream);
    const next = createRpcClient(OrganisationService, {
      baseUrl: downstream.url,
      timeoutMs: 5000,
      internalToken: TOKEN,
    });
    let firstCalls = 0;
    let bothCalledOnce!: () => void;
    const bothInHandlers = new Promise<void>((resolve) => (bothCalledOnce = resolve));
    const upstream = await startRpcServer({
      name: "upstream",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("upstream", "info", logSink([])),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          async getOrganisation(req) {
            // Two calls, the second after an await that lasts until both served calls have made their first: each
            // handler's id is still its own request's while the other request is being served.
            await next.getOrganisation({ id: req.id });
            if (++firstCalls === 2) bothCalledOnce();
            await bothInHandlers;
            return next.getOrganisation({ id: req.id });
          },
        }),
    });
    servers.push(upstream);
    const client = createRpcClient(OrganisationService, {
      baseUrl: upstream.url,
      timeoutMs: 5000,
      internalToken: TOKEN,
    });
    await Promise.all(
      ["chain-1", "chain-2"].map((id) => client.getOrganisation({ id: ORG_ID }, { headers: { "x-request-id": id } })),
    );
    const ids = downstreamLines.filter((l) => l.msg === "rpc").map((l) => l.requestId);
    expect(ids.sort()).toEqual(["chain-1", "chain-1", "chain-2", "chain-2"]);
  });

  it("sends a handler's response headers and trailers, and gives the handler the caller's deadline", async () => {
    const server = await startRpcServer({
      name: "headers",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("headers", "info", logSink([])),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          async getOrganisation(req, ctx) {
            ctx.responseHeader.set("x-answered-by", "headers");
            ctx.responseTrailer.set("x-rows", "1");
            if (req.id === "slow") {
              await new Promise((_, reject) =>
                ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error)),
              );
            }
            return {
              organisation: { id: req.id, name: `deadline ${ctx.timeoutMs()! > 0 && ctx.timeoutMs()! <= 5000}` },
            };
          },
        }),
    });
    servers.push(server);
    const client = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
    let header: Headers | undefined;
    let trailer: Headers | undefined;
    const res = await client.getOrganisation(
      { id: ORG_ID },
      { onHeader: (h) => (header = h), onTrailer: (t) => (trailer = t) },
    );
    expect(res.organisation?.name).toBe("deadline true");
    expect(header?.get("x-answered-by")).toBe("headers");
    expect(trailer?.get("x-rows")).toBe("1");
    // The handler's signal fires at the caller's deadline; the caller sees DeadlineExceeded.
    const slow = await rpcError(client.getOrganisation({ id: "slow" }, { timeoutMs: 150 }));
    expect(slow.code).toBe(Code.DeadlineExceeded);
  });

  it("answers JSON, a wrong content type and an unknown path as connect does", async () => {
    const server = await startRpcServer({
      name: "json",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("json", "info", logSink([])),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          getOrganisation: (req) => ({ organisation: { id: req.id, name: "As JSON" } }),
        }),
    });
    servers.push(server);
    const post = (path: string, contentType: string, body: string) =>
      fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": contentType, authorization: `Bearer ${TOKEN}` },
        body,
      });
    const json = await post(
      "/bizcard.organisation.v1.OrganisationService/GetOrganisation",
      "application/json",
      JSON.stringify({ id: ORG_ID }),
    );
    expect(json.status).toBe(200);
    expect(await json.json()).toMatchObject({ organisation: { id: ORG_ID, name: "As JSON" } });
    const text = await post("/bizcard.organisation.v1.OrganisationService/GetOrganisation", "text/plain", "x");
    expect(text.status).toBe(415);
    const unknown = await post("/nope.Service/Nothing", "application/proto", "");
    expect(unknown.status).toBe(404);
  });
});
