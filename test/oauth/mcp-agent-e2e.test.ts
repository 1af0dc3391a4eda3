// The proof that an AI agent connects from nothing: the MCP SDK's client,
// unmodified (Client, StreamableHTTPClientTransport, its auth()), with an
// OAuthClientProvider of its own, against the gateway and the real services.
// Its first request to /mcp is a 401 whose challenge names the resource
// metadata; from there it finds the authorization server, registers (once by
// a Client ID Metadata Document served on loopback https, once by dynamic
// registration), sends the person to consent (walked here without
// JavaScript), exchanges the code for a token bound to the /mcp audience,
// lists the tools, reads its organisation's contacts and nobody else's, and
// refreshes when its access token is revoked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import {
  connectAgent,
  MEMBER,
  MemoryAuthProvider,
  recordingFetch,
  startAgentPlatform,
  startMetadataHost,
  toolText,
  type MetadataHost,
  type Observed,
} from "../support/mcp-agent.js";
import type { Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";

// The agent's loopback callback: the person's browser would land there; the test reads the code off the 303.
const CALLBACK = "http://127.0.0.1:33418/callback";
const TOOLS = [
  "create_webhook_subscription",
  "delete_webhook_subscription",
  "get_contact",
  "get_organisation",
  "list_contacts",
  "list_webhook_subscriptions",
];

/** A tools/list at /mcp with `token`, as a bare HTTP client sends it. */
const mcpPost = (mcp: string, token: string) =>
  fetch(mcp, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

const line = (r: Observed) => `${r.method} ${r.path.split("?")[0]} ${r.status}`;
const form = (r: Observed) => new URLSearchParams(r.body);

/**
 * The agent's whole journey against `platform`; `registration` checks how it
 * registered (between discovery and the authorization request) and returns
 * the client_id it then uses.
 */
async function journey(
  platform: Platform,
  provider: MemoryAuthProvider,
  registration: (requests: Observed[]) => string,
) {
  const base = platform.base;
  const mcp = `${base}/mcp`;
  const { fetch: agentFetch, requests } = recordingFetch();
  let consentHtml = "";
  const client = await connectAgent(mcp, provider, agentFetch, MEMBER, (html) => (consentHtml = html));

  // Discovery from nothing: the 401 names the resource metadata, which names the authorization server.
  expect(requests.slice(0, 3).map(line)).toEqual([
    "POST /mcp 401",
    "GET /.well-known/oauth-protected-resource/mcp 200",
    "GET /.well-known/oauth-authorization-server 200",
  ]);
  expect(requests[0]!.challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
  const clientId = registration(requests.slice(3));
  expect(provider.client?.client_id).toBe(clientId);
  expect(consentHtml).toContain("Test Agent");

  // The authorization request: PKCE, and the MCP endpoint as the resource (RFC 8707).
  const authorize = provider.authorizationUrls[0]!;
  expect(`${authorize.origin}${authorize.pathname}`).toBe(`${base}/oauth/authorize`);
  expect(authorize.searchParams.get("client_id")).toBe(clientId);
  expect(authorize.searchParams.get("resource")).toBe(mcp);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");

  // The code exchange named the same resource, as a public client (no secret).
  const exchange = requests.find(
    (r) => r.path === "/oauth/token" && form(r).get("grant_type") === "authorization_code",
  )!;
  expect(exchange.status).toBe(200);
  expect(form(exchange).get("resource")).toBe(mcp);
  expect(form(exchange).get("client_id")).toBe(clientId);
  expect(form(exchange).has("client_secret")).toBe(false);
  expect(provider.saved).toHaveLength(1);
  const first = provider.saved[0]!;
  expect(first.token_type.toLowerCase()).toBe("bearer");
  expect(first.refresh_token).toBeTruthy();
  expect(first.scope?.split(" ")).toContain("contacts:read");

  // The tools, and the organisation's contacts: its own, nobody else's.
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
  const contacts = toolText(await client.callTool({ name: "list_contacts", arguments: {} }));
  expect(contacts).toContain("Lovelace");
  expect(contacts).toContain("Hopper");
  expect(contacts).not.toContain("Outsider");

  // The token is for the MCP endpoint only (its audience), not for the REST API.
  const principal = await platform.auth
    .client(AuthService)
    .authenticateAccessToken({ accessToken: first.access_token });
  expect(principal).toMatchObject({ audience: mcp, organisationId: platform.organisationId, clientId });
  const me = await fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${first.access_token}` } });
  expect(me.status).toBe(401);
  expect(me.headers.get("www-authenticate")).toMatch(/^Bearer /);
  // And a token of the REST API (client_credentials, no resource) is refused at /mcp.
  const app = await platform.createClient("REST App", [CALLBACK], {
    scopes: ["contacts:read"],
    ownerOrganisationId: platform.organisationId,
    grantTypes: ["client_credentials"],
  });
  const rest = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: app.clientId,
      client_secret: app.clientSecret,
    }).toString(),
  });
  expect(rest.status).toBe(200);
  const restToken = ((await rest.json()) as { access_token: string }).access_token;
  expect((await mcpPost(mcp, restToken)).status).toBe(401);

  // Refresh: the access token revoked (RFC 7009, a public client names itself), the
  // next call is a 401, and the SDK refreshes with its refresh token and carries on.
  const revoke = await fetch(`${base}/oauth/revoke`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      token: first.access_token,
      token_type_hint: "access_token",
      client_id: clientId,
    }).toString(),
  });
  expect(revoke.status).toBe(200);
  await waitFor(
    async () => (await mcpPost(mcp, first.access_token)).status === 401 || undefined,
    10_000,
    "the revoked token refused at /mcp",
  );
  const before = requests.length;
  const again = toolText(await client.callTool({ name: "list_contacts", arguments: {} }));
  expect(again).toContain("Lovelace");
  expect(again).not.toContain("Outsider");
  const refresh = requests.slice(before).find((r) => r.path === "/oauth/token")!;
  expect(form(refresh).get("grant_type")).toBe("refresh_token");
  expect(form(refresh).get("resource")).toBe(mcp);
  expect(refresh.status).toBe(200);
  expect(provider.saved).toHaveLength(2);
  expect(provider.current!.access_token).not.toBe(first.access_token);
  const renewed = await platform.auth
    .client(AuthService)
    .authenticateAccessToken({ accessToken: provider.current!.access_token });
  expect(renewed.audience).toBe(mcp);
  // No second consent: the person was asked once.
  expect(provider.authorizationUrls).toHaveLength(1);
  await client.close();
}

describe("an agent that names its Client ID Metadata Document", () => {
  let host: MetadataHost;
  let platform: Platform;
  let documentUrl: string;

  beforeAll(async () => {
    host = await startMetadataHost();
    // The agent's metadata document: its client_id is the document's own URL.
    documentUrl = `${host.base}/agent/client.json`;
    host.serve("/agent/client.json", {
      client_id: documentUrl,
      client_name: "Test Agent",
      redirect_uris: [CALLBACK],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
    // A loopback document host is a development setting (OAUTH_ALLOW_INSECURE_REDIRECTS); its certificate is trusted.
    platform = await startAgentPlatform({
      OAUTH_ALLOW_INSECURE_REDIRECTS: "true",
      OAUTH_CLIENT_METADATA_CA_FILE: host.caFile,
    });
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
    await host?.close();
  });

  it("connects from nothing: 401, metadata, the document fetched by the server, consent, tools, contacts, refresh", async () => {
    const metadata = (await (await fetch(`${platform.base}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(metadata.client_id_metadata_document_supported).toBe(true);
    expect(metadata.registration_endpoint).toBeUndefined();
    await journey(platform, new MemoryAuthProvider(CALLBACK, documentUrl), (requests) => {
      // No registration request: the URL is the client_id, and the server fetched the document.
      expect(requests.some((r) => r.path.startsWith("/oauth/register"))).toBe(false);
      expect(host.requests).toContain("/agent/client.json");
      return documentUrl;
    });
  }, 60_000);
});

describe("an agent that registers dynamically (RFC 7591)", () => {
  let platform: Platform;

  beforeAll(async () => {
    platform = await startAgentPlatform({ OAUTH_DYNAMIC_REGISTRATION: "true" });
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it("connects from nothing: 401, metadata, POST /oauth/register, consent, tools, contacts, refresh", async () => {
    const provider = new MemoryAuthProvider(CALLBACK);
    await journey(platform, provider, (requests) => {
      const register = requests[0]!;
      expect(line(register)).toBe("POST /oauth/register 201");
      const sent = JSON.parse(register.body) as Record<string, unknown>;
      expect(sent).toMatchObject({
        client_name: "Test Agent",
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: "none",
      });
      // The client_id the server issued, kept by the provider as the SDK saved it.
      const clientId = provider.client!.client_id;
      expect(clientId).not.toMatch(/^https?:/);
      return clientId;
    });
  }, 60_000);
});
