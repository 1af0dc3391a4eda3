// Interoperability with stock connect-es, both ways: a stock connect-node
// client (HTTP/1.1 and HTTP/2, binary and JSON) calling this project's RPC
// server (connect-node's adapter with the project's interceptors), and this
// project's client calling a stock connectNodeAdapter server. Each: a call to
// the real organisation service, every error code with its details, the
// deadline, an unknown method, an oversized message, and a handler that
// throws, with no unhandled rejection anywhere.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import { connectNodeAdapter, createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import {
  OrganisationSchema,
  OrganisationService,
  type GetOrganisationRequest,
} from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createLogger } from "../../services/shared/logger.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import { startPlatform, type OrganisationApp, type Platform, type StartedService } from "../support/platform.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "i".repeat(40);
/** The read limit of the test-only servers and clients: small, so that an oversized message is cheap to make. */
const LIMIT = 64 * 1024;
const OVERSIZED = "x".repeat(LIMIT + 1);
const ERROR_CODES = Object.values(Code).filter((c): c is Code => typeof c === "number");

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

/**
 * A test-only GetOrganisation whose id says what to do: "code-N" fails with
 * code N and a detail, "throw" throws a plain Error (a bug), "slow" waits for
 * the call's signal (the deadline), "big" answers more than LIMIT bytes.
 */
async function scripted(req: GetOrganisationRequest, ctx: HandlerContext) {
  const [, n] = /^code-(\d+)$/.exec(req.id) ?? [];
  if (n !== undefined) {
    const code = Number(n) as Code;
    const detail = create(OrganisationSchema, { id: "detail", name: Code[code] });
    throw new ConnectError(`failed with ${Code[code]}`, code, { "x-detail-code": n }, [
      { desc: OrganisationSchema, value: detail },
    ]);
  }
  if (req.id === "throw") throw new Error("a bug with a secret-value inside");
  if (req.id === "slow") {
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
    throw ctx.signal.reason;
  }
  return { organisation: { id: req.id, name: req.id === "big" ? OVERSIZED : "Scripted" } };
}

const scriptedRoutes = (router: ConnectRouter) => router.rpc(OrganisationService.method.getOrganisation, scripted);

/** A stock connect-node transport with the internal credential (every server of this project requires it). */
function stockClient(baseUrl: string, httpVersion: "1.1" | "2", useBinaryFormat: boolean) {
  const credential: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({
    baseUrl,
    httpVersion,
    useBinaryFormat,
    interceptors: [credential],
    readMaxBytes: LIMIT * 4,
  });
  return { organisation: createClient(OrganisationService, transport), auth: createClient(AuthService, transport) };
}

async function expectEveryErrorCode(call: (id: string) => Promise<unknown>) {
  for (const code of ERROR_CODES) {
    const err = await rpcError(call(`code-${code}`));
    expect(err.code, Code[code]).toBe(code);
    expect(err.rawMessage).toBe(`failed with ${Code[code]}`);
    expect(err.metadata.get("x-detail-code")).toBe(String(code));
    const [detail] = err.findDetails(OrganisationSchema);
    expect(detail, Code[code]).toMatchObject({ id: "detail", name: Code[code] });
  }
}

beforeAll(() => void process.on("unhandledRejection", onUnhandled));
afterAll(() => void process.off("unhandledRejection", onUnhandled));

describe("a stock connect-node client calling this project's server", () => {
  let platform: Platform;
  let organisation: StartedService<OrganisationApp>;
  let scriptedServer: RunningServer;

  beforeAll(async () => {
    // The platform's organisation service alone.
    platform = await startPlatform({ token: TOKEN });
    organisation = platform.organisation;
    scriptedServer = await startRpcServer({
      name: "scripted",
      host: "127.0.0.1",
      port: 0,
      routes: scriptedRoutes,
      logger: createLogger("scripted", "silent"),
      internalTokens: [TOKEN],
      readMaxBytes: LIMIT,
    });
  });

  afterAll(async () => {
    await scriptedServer?.close();
    await platform?.stop();
  });

  for (const httpVersion of ["1.1", "2"] as const) {
    for (const binary of [true, false]) {
      describe(`HTTP/${httpVersion}, ${binary ? "binary" : "JSON"}`, () => {
        it("creates and reads an organisation on the real service", async () => {
          const { organisation: client } = stockClient(organisation.server.url, httpVersion, binary);
          const email = `owner-${httpVersion}-${binary}@interop.test`;
          const created = await client.createOrganisation({
            name: "Interop",
            ownerEmail: email,
            ownerPassword: "password-interop",
          });
          const got = await client.getOrganisation({ id: created.organisation!.id });
          expect(got.organisation?.name).toBe("Interop");
          expect((await rpcError(client.getOrganisation({ id: "00000000-0000-4000-8000-000000000000" }))).code).toBe(
            Code.NotFound,
          );
        });

        it("receives every error code with its message, metadata and details", async () => {
          const { organisation: client } = stockClient(scriptedServer.url, httpVersion, binary);
          await expectEveryErrorCode((id) => client.getOrganisation({ id }));
        });

        it("gets DeadlineExceeded from a handler slower than the deadline", async () => {
          const { organisation: client } = stockClient(scriptedServer.url, httpVersion, binary);
          expect((await rpcError(client.getOrganisation({ id: "slow" }, { timeoutMs: 150 }))).code).toBe(
            Code.DeadlineExceeded,
          );
        });

        it("gets Unimplemented for a method the server does not have", async () => {
          const { organisation: client, auth } = stockClient(scriptedServer.url, httpVersion, binary);
          expect((await rpcError(client.listContacts({ organisationId: "o" }))).code).toBe(Code.Unimplemented);
          expect((await rpcError(auth.introspectToken({ token: "t" }))).code).toBe(Code.Unimplemented);
        });

        it("gets ResourceExhausted for a request larger than the server reads", async () => {
          const { organisation: client } = stockClient(scriptedServer.url, httpVersion, binary);
          expect((await rpcError(client.getOrganisation({ id: OVERSIZED }))).code).toBe(Code.ResourceExhausted);
        });

        it("gets Internal, without the cause, from a handler that throws", async () => {
          const { organisation: client } = stockClient(scriptedServer.url, httpVersion, binary);
          const err = await rpcError(client.getOrganisation({ id: "throw" }));
          expect(err.code).toBe(Code.Internal);
          expect(err.rawMessage).not.toContain("secret-value");
          // The server still serves.
          expect((await client.getOrganisation({ id: "after" })).organisation?.name).toBe("Scripted");
        });
      });
    }
  }
});

describe("this project's client calling a stock connectNodeAdapter server", () => {
  let platform: Platform;
  let organisation: StartedService<OrganisationApp>;
  const servers: http.Server[] = [];

  const stockServer = async (routes: (router: ConnectRouter) => void) => {
    const server = http.createServer(connectNodeAdapter({ routes, readMaxBytes: LIMIT }));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    // The platform's organisation service alone.
    platform = await startPlatform({ token: TOKEN });
    organisation = platform.organisation;
  });

  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
    await platform?.stop();
  });

  const client = (baseUrl: string, timeoutMs = 5000) =>
    createRpcClient(OrganisationService, { baseUrl, timeoutMs, internalToken: TOKEN, readMaxBytes: LIMIT });

  it("creates and reads an organisation through the real service's routes", async () => {
    const c = client(await stockServer(organisation.app.routes));
    const created = await c.createOrganisation({
      name: "Stock",
      ownerEmail: "owner@stock.test",
      ownerPassword: "password-stock",
    });
    expect((await c.getOrganisation({ id: created.organisation!.id })).organisation?.name).toBe("Stock");
  });

  it("receives every error code with its message, metadata and details", async () => {
    const c = client(await stockServer(scriptedRoutes));
    await expectEveryErrorCode((id) => c.getOrganisation({ id }));
  });

  it("gives up with DeadlineExceeded at its deadline", async () => {
    const c = client(await stockServer(scriptedRoutes), 150);
    expect((await rpcError(c.getOrganisation({ id: "slow" }))).code).toBe(Code.DeadlineExceeded);
  });

  it("gets Unimplemented for a method the server does not have", async () => {
    const c = client(await stockServer(scriptedRoutes));
    expect((await rpcError(c.listContacts({ organisationId: "o" }))).code).toBe(Code.Unimplemented);
  });

  it("gets ResourceExhausted for a request larger than the server reads, and refuses an answer larger than its own limit", async () => {
    const c = client(await stockServer(scriptedRoutes));
    expect((await rpcError(c.getOrganisation({ id: OVERSIZED }))).code).toBe(Code.ResourceExhausted);
    expect((await rpcError(c.getOrganisation({ id: "big" }))).code).toBe(Code.ResourceExhausted);
    expect((await c.getOrganisation({ id: "after" })).organisation?.name).toBe("Scripted");
  });

  it("gets Internal, without the cause, from a handler that throws", async () => {
    const c = client(await stockServer(scriptedRoutes));
    const err = await rpcError(c.getOrganisation({ id: "throw" }));
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).not.toContain("secret-value");
  });
});

describe("both ways", () => {
  it("left no unhandled rejection", async () => {
    // Node reports a rejection nobody handled once the microtasks of the turn it happened in have run. The calls
    // above all settled and their servers are closed, so one more turn of the event loop has reported any.
    await new Promise<void>((done) => setImmediate(done));
    expect(unhandled).toEqual([]);
  });
});
