// The RPC path between services: what the project's client puts on the wire
// (connections reused, each call in one piece) and what a read answers.
// What the server logs per call: rpc-server-logs.test.ts; how it serves a call: rpc-path-server.test.ts.
// Behaviour only, never timing.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetOrganisationResponseSchema,
  OrganisationService,
} from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "r".repeat(40);
const ORG_ID = "7c4f5d0e-1111-4222-8333-444455556666";

/** A plain node:http server answering GetOrganisation as a Connect server would, recording what arrives. */
async function recordingServer(options: { answer?: boolean; proxyErrorFirst?: boolean } = {}) {
  const connections: number[] = [];
  const requests: { headers: http.IncomingHttpHeaders; body: Buffer; connection: number }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({
        headers: req.headers,
        body: Buffer.concat(chunks),
        connection: (req.socket as unknown as { n: number }).n,
      });
      if (options.answer === false) return; // holds the call open
      if (options.proxyErrorFirst && requests.length === 1) {
        // What a proxy in between answers: not Connect's JSON, a body connect never reads.
        res.writeHead(502, { "content-type": "text/html" });
        res.end(`<html><body>${"bad gateway ".repeat(2000)}</body></html>`);
        return;
      }
      const message = create(GetOrganisationResponseSchema, { organisation: { id: ORG_ID, name: "Recorded" } });
      res.writeHead(200, { "content-type": "application/proto" });
      res.end(toBinary(GetOrganisationResponseSchema, message));
    });
  });
  server.on("connection", (socket) => {
    const n = connections.length + 1;
    connections.push(n);
    (socket as unknown as { n: number }).n = n;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    connections,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("the RPC client on the wire", () => {
  it("sends sequential calls over one kept-alive connection", async () => {
    const server = await recordingServer();
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 5000,
        internalToken: TOKEN,
      });
      for (let i = 0; i < 20; i++) {
        const res = await client.getOrganisation({ id: ORG_ID });
        expect(res.organisation?.name).toBe("Recorded");
      }
      expect(server.requests).toHaveLength(20);
      expect(server.connections).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it("reports a proxy's error page (not Connect's JSON) as Unavailable, and the next call goes through", async () => {
    const server = await recordingServer({ proxyErrorFirst: true });
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 2000,
        internalToken: TOKEN,
      });
      const err = await rpcError(client.getOrganisation({ id: ORG_ID }));
      expect(err.code).toBe(Code.Unavailable);
      const res = await client.getOrganisation({ id: ORG_ID });
      expect(res.organisation?.name).toBe("Recorded");
    } finally {
      await server.close();
    }
  });

  it("reuses its connections for later bursts of concurrent calls", async () => {
    const server = await recordingServer();
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 5000,
        internalToken: TOKEN,
      });
      for (let burst = 0; burst < 3; burst++) {
        await Promise.all(Array.from({ length: 10 }, () => client.getOrganisation({ id: ORG_ID })));
      }
      expect(server.requests).toHaveLength(30);
      expect(server.connections.length).toBeLessThanOrEqual(10);
    } finally {
      await server.close();
    }
  });

  it("sends the internal credential, the request id, its deadline and binary Protobuf", async () => {
    const server = await recordingServer();
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 5000,
        internalToken: TOKEN,
      });
      await client.getOrganisation({ id: ORG_ID }, { headers: { "x-request-id": "req-1" } });
      const [req] = server.requests;
      expect(req!.body.length).toBeGreaterThan(ORG_ID.length);
      expect(req!.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(req!.headers["x-request-id"]).toBe("req-1");
      expect(req!.headers["connect-timeout-ms"]).toBe("5000");
      expect(req!.headers["content-type"]).toBe("application/proto");
    } finally {
      await server.close();
    }
  });

  it("reports a server that stopped, with connections kept alive to it, as Unavailable", async () => {
    const server = await recordingServer();
    const client = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 2000, internalToken: TOKEN });
    await client.getOrganisation({ id: ORG_ID });
    await server.close();
    expect((await rpcError(client.getOrganisation({ id: ORG_ID }))).code).toBe(Code.Unavailable);
  });

  it("gives up at the deadline when the server does not answer", async () => {
    const server = await recordingServer({ answer: false });
    try {
      const client = createRpcClient(OrganisationService, {
        baseUrl: server.url,
        timeoutMs: 200,
        internalToken: TOKEN,
      });
      const err = await rpcError(client.getOrganisation({ id: ORG_ID }));
      expect(err.code).toBe(Code.DeadlineExceeded);
    } finally {
      await server.close();
    }
  });

  it("reports a server that is not there as Unavailable", async () => {
    const server = await recordingServer();
    await server.close();
    const client = createRpcClient(OrganisationService, { baseUrl: server.url, timeoutMs: 2000, internalToken: TOKEN });
    const err = await rpcError(client.getOrganisation({ id: ORG_ID }));
    expect(err.code).toBe(Code.Unavailable);
  });
});

describe("GetOrganisation, the hot read", () => {
  let platform: Platform;
  let svc: StartedService<OrganisationApp>;

  beforeAll(async () => {
    platform = await startPlatform({ token: TOKEN });
    svc = platform.organisation;
  });

  afterAll(async () => {
    await platform?.stop();
  });

  it("answers the organisation as it was created, whatever the id's case", async () => {
    const client = svc.client(OrganisationService);
    const { organisation } = await client.createOrganisation({
      name: "Read Back",
      ownerEmail: "owner@read.test",
      ownerPassword: "password-r",
    });
    const got = await client.getOrganisation({ id: organisation!.id.toUpperCase() });
    expect(got.organisation?.id).toBe(organisation!.id);
    expect(got.organisation?.name).toBe("Read Back");
    expect(timestampMs(got.organisation!.createTime!)).toBe(timestampMs(organisation!.createTime!));
  });

  it("answers NotFound for an unknown or malformed id", async () => {
    const client = svc.client(OrganisationService);
    expect((await rpcError(client.getOrganisation({ id: "00000000-0000-4000-8000-000000000000" }))).code).toBe(
      Code.NotFound,
    );
    expect((await rpcError(client.getOrganisation({ id: "nope" }))).code).toBe(Code.NotFound);
  });
});
