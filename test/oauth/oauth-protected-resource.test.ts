// RFC 9728 as an agent meets it: a request without a token is answered 401
// with resource_metadata, that URL answers the resource's metadata, whose
// authorization_servers name the issuer whose RFC 8414 document the agent
// reads next. Checked with the MCP SDK's own discovery functions, which agents
// run, and by hand; and the RFC 8414 document's switches for client
// registration.
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";

let platform: Platform;
let base: string;

beforeAll(async () => {
  platform = await startPlatform({ organisation: false, auth: true, webhook: false, delivery: false });
  base = (await platform.addGateway({ publicUrlPort: true })).base;
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

const SCOPES = ["organisation:read", "webhooks:read", "webhooks:write", "contacts:read"];

describe("protected resource metadata (RFC 9728)", () => {
  it("answers the REST API's and the MCP endpoint's documents", async () => {
    for (const [path, resource, name] of [
      ["/.well-known/oauth-protected-resource", base, "bizcard REST API"],
      ["/.well-known/oauth-protected-resource/mcp", `${base}/mcp`, "bizcard MCP server"],
    ] as const) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get("cache-control")).toBe("public, max-age=300");
      expect(await res.json()).toEqual({
        resource,
        authorization_servers: [base],
        scopes_supported: SCOPES,
        bearer_methods_supported: ["header"],
        resource_name: name,
        resource_documentation: `${base}/docs`,
      });
    }
  });

  it("a 401 leads to the metadata, and the metadata to the authorization server (the MCP SDK's discovery)", async () => {
    const res = await fetch(`${base}/oauth/me`);
    expect(res.status).toBe(401);
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource`);
    // The SDK derives the well-known URL from the server URL when no header names one: the same document.
    const api = await discoverOAuthProtectedResourceMetadata(base, { resourceMetadataUrl });
    expect(api.resource).toBe(base);
    const mcp = await discoverOAuthProtectedResourceMetadata(`${base}/mcp`);
    expect(mcp.resource).toBe(`${base}/mcp`);
    const as = await discoverAuthorizationServerMetadata(mcp.authorization_servers![0]!);
    expect(as?.issuer).toBe(base);
    expect(as?.token_endpoint).toBe(`${base}/oauth/token`);
    expect((as as Record<string, unknown>).client_id_metadata_document_supported).toBe(true);
  });

  it("an unknown resource path under the well-known prefix is 404 in the one error shape", async () => {
    const res = await fetch(`${base}/.well-known/oauth-protected-resource/other`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: "not_found" });
  });
});

describe("registration switches in the RFC 8414 document", () => {
  const metadata = async (url: string) =>
    (await (await fetch(`${url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;

  it("by default: metadata documents advertised, no registration endpoint", async () => {
    const doc = await metadata(base);
    expect(doc.client_id_metadata_document_supported).toBe(true);
    expect(doc).not.toHaveProperty("registration_endpoint");
    expect(doc.token_endpoint_auth_methods_supported).toContain("none");
  });

  it("OAUTH_DYNAMIC_REGISTRATION=true advertises /oauth/register; OAUTH_CLIENT_METADATA_DOCUMENTS=false drops the flag", async () => {
    const gw = await platform.addGateway({
      publicUrlPort: true,
      config: { OAUTH_DYNAMIC_REGISTRATION: "true", OAUTH_CLIENT_METADATA_DOCUMENTS: "false" },
    });
    const doc = await metadata(gw.base);
    expect(doc.registration_endpoint).toBe(`${gw.base}/oauth/register`);
    expect(doc).not.toHaveProperty("client_id_metadata_document_supported");
  });
});
