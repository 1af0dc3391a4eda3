// The MCP endpoint at /mcp as an agent's HTTP client sees it: the bearer
// check of the /mcp resource before anything MCP-specific, the audience
// kept apart from the REST API's, the methods served, the Origin check,
// and the SDK's client connecting and listing the tools.
import { describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import { app, base, connect, post, tokenFor, useMcpSuite } from "../support/mcp-suite.js";

useMcpSuite();

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};

describe("the bearer check, before anything MCP-specific", () => {
  it("no token: 401 with resource_metadata naming the /mcp resource's metadata, whatever the body", async () => {
    for (const body of [
      initialize,
      "not json at all",
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_contacts" } },
    ]) {
      const res = await post(body);
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer realm="bizcard", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
      );
      expect(res.headers.get("cache-control")).toBe("no-store");
      await expectError(res, 401, "invalid_token");
    }
  });

  it("the metadata it names says the resource is /mcp and where to get a token", async () => {
    const res = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`);
    expect(res.status).toBe(200);
    const metadata = (await res.json()) as { resource: string; authorization_servers: string[] };
    expect(metadata.resource).toBe(`${base}/mcp`);
    expect(metadata.authorization_servers).toEqual([base]);
  });

  it("a REST API token (no resource) is 401 invalid_token at /mcp, saying which resource to ask for", async () => {
    const token = await tokenFor(app, undefined, "");
    const res = await post(initialize, { authorization: `Bearer ${token}` });
    expect(res.headers.get("www-authenticate")).toMatch(
      new RegExp(
        `^Bearer realm="bizcard", resource_metadata="${base}/\\.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="[^"]*resource=${base}/mcp"$`,
      ),
    );
    await expectError(
      res,
      401,
      "invalid_token",
      `this access token was issued for ${base}; ask for one with resource=${base}/mcp`,
    );
  });

  it("an /mcp token is refused by the REST API", async () => {
    const token = await tokenFor(app);
    const res = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="bizcard", resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource", error="invalid_token"/,
    );
    await expectError(
      res,
      401,
      "invalid_token",
      `this access token was issued for ${base}/mcp; ask for one with resource=${base}`,
    );
  });

  it("an unknown token: 401 invalid_token with resource_metadata", async () => {
    const res = await post(initialize, { authorization: "Bearer not-a-token-this-server-issued" });
    expect(res.headers.get("www-authenticate")).toMatch(/resource_metadata="[^"]+\/mcp", error="invalid_token"/);
    await expectError(res, 401, "invalid_token");
  });
});

describe("the SDK's client", () => {
  it("connects (initialize), learns the server and lists the six tools with their schemas", async () => {
    const client = await connect(await tokenFor(app));
    expect(client.getServerVersion()).toMatchObject({ name: "bizcard" });
    expect(client.getServerVersion()!.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "create_webhook_subscription",
      "delete_webhook_subscription",
      "get_contact",
      "get_organisation",
      "list_contacts",
      "list_webhook_subscriptions",
    ]);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.outputSchema?.type, tool.name).toBe("object");
      expect(tool.description, tool.name).toMatch(/Needs the scopes? /);
    }
    const create = tools.find((t) => t.name === "create_webhook_subscription")!;
    expect(create.description).toMatch(/Needs the scopes webhooks:write and contacts:read\.$/);
    expect(create.inputSchema.required).toEqual(["target_url", "event_type"]);
    expect(create.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(tools.find((t) => t.name === "delete_webhook_subscription")!.annotations).toMatchObject({
      destructiveHint: true,
    });
    await client.close();
  });

  it("answers initialize and tools/list with only a valid token for /mcp (no scope at all)", async () => {
    const client = await connect(await tokenFor(app, []));
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(6);
    await client.close();
  });
});

describe("HTTP", () => {
  it("a JSON-RPC request answers 200 application/json, no session id, not cached", async () => {
    const res = await post(initialize, { authorization: `Bearer ${await tokenFor(app)}` });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-request-id")).toBeTruthy();
    const body = (await res.json()) as { jsonrpc: string; id: number; result: { serverInfo: { name: string } } };
    expect(body).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: "bizcard" } } });
  });

  it("a notification alone is 202 without a body", async () => {
    const res = await post(
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { authorization: `Bearer ${await tokenFor(app)}` },
    );
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  it("GET and DELETE are 405 with Allow: POST (the endpoint is stateless: no stream, no session)", async () => {
    const token = await tokenFor(app);
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(`${base}/mcp`, {
        method,
        headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
      });
      expect(res.headers.get("allow")).toBe("POST");
      await expectError(res, 405, "method_not_allowed");
    }
  });

  it("an Origin other than this server's is 403, even with a valid token; this server's own origin passes", async () => {
    const token = await tokenFor(app);
    for (const origin of ["https://evil.example", "http://127.0.0.1:1", "null"]) {
      const res = await post(initialize, { authorization: `Bearer ${token}`, origin });
      await expectError(res, 403, "forbidden", /^requests from the origin ".*" are not accepted here$/);
    }
    const own = await post(initialize, { authorization: `Bearer ${token}`, origin: new URL(base).origin });
    expect(own.status).toBe(200);
  });

  it("a body that is not JSON-RPC is 400 in the error shape; another media type is 415; an Accept without event-stream is 406", async () => {
    const auth = { authorization: `Bearer ${await tokenFor(app)}` };
    await expectError(await post({ id: 1, method: "initialize" }, auth), 400, "invalid_request");
    await expectError(await post([], auth), 400, "invalid_request");
    await expectError(await post("{not json", auth), 400, "invalid_request");
    const jsonOnly = /^send the (JSON-RPC message|body) as application\/json$/;
    await expectError(
      await post("a=b", { ...auth, "content-type": "application/x-www-form-urlencoded" }),
      415,
      "unsupported_media_type",
      jsonOnly,
    );
    await expectError(
      await post("a=b", { ...auth, "content-type": "text/plain" }),
      415,
      "unsupported_media_type",
      jsonOnly,
    );
    await expectError(await post(initialize, { ...auth, accept: "application/json" }), 406, "not_acceptable");
  });

  it("an MCP-Protocol-Version the server does not speak is 400 (the SDK's JSON-RPC error)", async () => {
    const res = await post(
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
      { authorization: `Bearer ${await tokenFor(app)}`, "mcp-protocol-version": "1999-01-01" },
    );
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/Unsupported protocol version/);
  });

  it("odd JSON-RPC is answered by the protocol, never a 500", async () => {
    const auth = { authorization: `Bearer ${await tokenFor(app)}` };
    const cases: [body: unknown, status: number][] = [
      [{ jsonrpc: "2.0", id: 5, method: "no/such/method" }, 200],
      [{ jsonrpc: "2.0", id: 6, method: "tools/call" }, 200],
      [
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_contact", arguments: "not an object" } },
        200,
      ],
      [{ jsonrpc: "2.0", id: 8, result: {} }, 202],
      [[initialize, { ...initialize, id: 2 }], 400],
      [{ jsonrpc: "2.0", id: 9, method: 42 }, 400],
    ];
    for (const [body, status] of cases) {
      const res = await post(body, auth);
      expect(res.status, JSON.stringify(body)).toBe(status);
      if (status !== 200) continue;
      // A JSON-RPC error, or a tool error: either way the agent reads what went wrong.
      const answer = (await res.json()) as { error?: { message: string }; result?: { isError?: boolean } };
      expect(answer.error !== undefined || answer.result?.isError === true, JSON.stringify(answer)).toBe(true);
    }
  });
});
