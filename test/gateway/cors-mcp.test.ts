// CORS of /mcp as a browser sees it: its own origins (MCP_ALLOWED_ORIGINS,
// the same list as its Origin check, and PUBLIC_URL's), whose preflight and
// answers name that origin, and every other origin refused; and the
// variable's own checks.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../services/shared/config.js";
import { expectError } from "../support/api-client.js";
import { AGENT, base, list, PAGE, preflight, token, useCorsSuite } from "../support/cors-suite.js";

useCorsSuite();

describe("/mcp: its own origins (PUBLIC_URL's and MCP_ALLOWED_ORIGINS)", () => {
  const mcpHeaders = "authorization, content-type, mcp-protocol-version";

  it("the preflight of an allowed origin names that origin and the headers an MCP client sends", async () => {
    for (const origin of [AGENT, "http://localhost:5173", new URL(base).origin]) {
      const res = await preflight("/mcp", origin, "POST", mcpHeaders);
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(origin);
      expect(list(res.headers.get("vary"))).toContain("origin");
      expect(list(res.headers.get("access-control-allow-methods"))).toContain("post");
      expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
        expect.arrayContaining([
          "authorization",
          "content-type",
          "mcp-protocol-version",
          "mcp-session-id",
          "last-event-id",
        ]),
      );
    }
  });

  it("a browser agent reads the 401's WWW-Authenticate, which leads it to the metadata", async () => {
    const res = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { origin: AGENT, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }),
    });
    expect(res.headers.get("access-control-allow-origin")).toBe(AGENT);
    expect(list(res.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["www-authenticate", "mcp-session-id"]),
    );
    expect(res.headers.get("www-authenticate")).toContain(
      `resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    );
    await expectError(res, 401, "invalid_token");
  });

  it("an allowed origin's MCP request with a token is answered, readable", async () => {
    const res = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        origin: AGENT,
        authorization: `Bearer ${await token(`${base}/mcp`)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "web", version: "0" } },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(AGENT);
    expect(((await res.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name).toBe("bizcard");
  });

  it("another origin: the preflight allows nothing, the request is 403 without CORS headers", async () => {
    const pre = await preflight("/mcp", PAGE, "POST", mcpHeaders);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const res = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        origin: PAGE,
        authorization: `Bearer ${await token(`${base}/mcp`)}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: "{}",
    });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    await expectError(res, 403, "forbidden", `requests from the origin "${PAGE}" are not accepted here`);
  });
});

describe("MCP_ALLOWED_ORIGINS", () => {
  it("takes origins as a browser sends them, and refuses anything else naming the variable", () => {
    expect(loadConfig({}).MCP_ALLOWED_ORIGINS).toEqual([]);
    expect(
      loadConfig({ MCP_ALLOWED_ORIGINS: " https://a.example, http://localhost:5173 ," }).MCP_ALLOWED_ORIGINS,
    ).toEqual(["https://a.example", "http://localhost:5173"]);
    for (const bad of [
      "https://a.example/",
      "https://a.example/app",
      "a.example",
      "https://A.example",
      "https://a.example:443",
      "ftp://a.example",
    ]) {
      expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).toThrow(/^MCP_ALLOWED_ORIGINS: expected origins/);
    }
  });
});
