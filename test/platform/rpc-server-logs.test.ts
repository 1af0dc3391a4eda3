// The RPC server's log: one line per call, at the level its outcome deserves
// (nothing for a success at info; an expected failure at info without its
// cause; an outage downstream at warn and a fault at error, with their
// causes). No database. Behaviour only, never timing.
import { Writable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import { OrganisationSchema, OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "r".repeat(40);
const ORG_ID = "7c4f5d0e-1111-4222-8333-444455556666";

describe("one log line per call", () => {
  let lines: Record<string, unknown>[] = [];
  let server: RunningServer;
  let level = "info";

  const start = async (logLevel: string) => {
    await server?.close();
    level = logLevel;
    lines = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString("utf8").split("\n"))
          if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    server = await startRpcServer({
      name: "log-test",
      host: "127.0.0.1",
      port: 0,
      logger: createLogger("log-test", level, sink),
      internalTokens: [TOKEN],
      routes: (router) =>
        router.service(OrganisationService, {
          async getOrganisation(req) {
            if (req.id === "found")
              return {
                organisation: create(OrganisationSchema, {
                  id: ORG_ID,
                  name: "Logged",
                  createTime: timestampFromDate(new Date()),
                }),
              };
            if (req.id === "invalid")
              throw new ConnectError(
                "id: expected a UUID",
                Code.InvalidArgument,
                undefined,
                undefined,
                new Error("detail that stays inside"),
              );
            if (req.id === "missing") throw new ConnectError("organisation not found", Code.NotFound);
            if (req.id === "fault")
              throw new ConnectError(
                "could not read",
                Code.Internal,
                undefined,
                undefined,
                new Error("database went away"),
              );
            if (req.id === "outage")
              throw new ConnectError(
                "organisation service unavailable",
                Code.Unavailable,
                undefined,
                undefined,
                new Error("connect ECONNREFUSED 127.0.0.1:7102"),
              );
            throw new TypeError("unexpected bug");
          },
        }),
    });
  };
  const client = () =>
    createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 5000, internalToken: TOKEN });
  const rpcLines = () => lines.filter((l) => l.msg === "rpc");

  afterAll(async () => {
    await server?.close();
  });

  it("writes nothing for a call that succeeds at info, one line at debug", async () => {
    await start("info");
    await client().getOrganisation({ id: "found" });
    await client().getOrganisation({ id: "found" });
    expect(rpcLines()).toEqual([]);
    await start("debug");
    await client().getOrganisation({ id: "found" }, { headers: { "x-request-id": "ok-1" } });
    expect(rpcLines()).toHaveLength(1);
    expect(rpcLines()[0]).toMatchObject({
      level: 20,
      code: "ok",
      requestId: "ok-1",
      procedure: "bizcard.organisation.v1.OrganisationService/GetOrganisation",
    });
  });

  it("logs an expected failure as one info line with its code and message, without the cause or a stack", async () => {
    await start("info");
    const cases = [
      ["invalid", Code.InvalidArgument, "InvalidArgument", "id: expected a UUID"],
      ["missing", Code.NotFound, "NotFound", "organisation not found"],
    ] as const;
    for (const [id, code, name, message] of cases) {
      lines = [];
      const err = await rpcError(client().getOrganisation({ id }, { headers: { "x-request-id": `req-${id}` } }));
      expect(err.code).toBe(code);
      expect(rpcLines()).toHaveLength(1);
      const line = rpcLines()[0]!;
      expect(line).toMatchObject({ level: 30, code: name, message, requestId: `req-${id}` });
      expect(line).not.toHaveProperty("err");
      expect(JSON.stringify(line)).not.toMatch(/stack|detail that stays inside|\n\s+at /);
    }
  });

  it("logs Unimplemented as one info line without a stack", async () => {
    await start("info");
    const err = await rpcError(client().listContacts({ organisationId: ORG_ID }));
    expect(err.code).toBe(Code.Unimplemented);
    expect(rpcLines()).toHaveLength(1);
    expect(rpcLines()[0]).toMatchObject({ level: 30, code: "Unimplemented" });
    expect(rpcLines()[0]).not.toHaveProperty("err");
  });

  it("logs an outage downstream (Unavailable) at warn with its cause, so an operator sees why", async () => {
    await start("info");
    const err = await rpcError(
      client().getOrganisation({ id: "outage" }, { headers: { "x-request-id": "req-outage" } }),
    );
    expect(err.code).toBe(Code.Unavailable);
    expect(rpcLines()).toHaveLength(1);
    expect(rpcLines()[0]).toMatchObject({
      level: 40,
      code: "Unavailable",
      requestId: "req-outage",
      err: { message: "connect ECONNREFUSED 127.0.0.1:7102" },
    });
  });

  it("logs a server fault at error with its cause, and answers Internal without it", async () => {
    await start("info");
    const fault = await rpcError(client().getOrganisation({ id: "fault" }));
    expect(fault.code).toBe(Code.Internal);
    expect(fault.rawMessage).not.toContain("database went away");
    const bug = await rpcError(client().getOrganisation({ id: "bug" }));
    expect(bug.code).toBe(Code.Internal);
    expect(bug.rawMessage).toBe("internal error");
    expect(rpcLines()).toHaveLength(2);
    const [faultLine, bugLine] = rpcLines() as {
      level: number;
      code: string;
      err: { message: string; stack: string };
    }[];
    expect(faultLine).toMatchObject({ level: 50, code: "Internal", err: { message: "database went away" } });
    expect(faultLine!.err.stack).toContain("database went away");
    expect(bugLine).toMatchObject({
      level: 50,
      code: "Internal",
      err: { type: "TypeError", message: "unexpected bug" },
    });
    expect(bugLine!.err.stack).toContain("TypeError: unexpected bug");
  });
});
