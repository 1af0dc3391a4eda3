// The MCP endpoint's suites: the gateway in front of the organisation, auth
// and webhook services, two organisations, client applications with
// different scopes, tokens for the /mcp resource (client_credentials with
// resource=<base>/mcp), and the MCP SDK's own client over Streamable HTTP.
// Each suite file calls useMcpSuite() once.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { AppClient } from "./api-client.js";
import { startPlatform, type Platform } from "./platform.js";

export let platform: Platform;
export let base: string;
export let orgId: string;
export let otherOrgId: string;

/** Every scope, of orgId. */
export let app: AppClient;
/** Another application of orgId (its own subscriptions). */
export let sibling: AppClient;
/** Every scope, of otherOrgId. */
export let foreign: AppClient;

export const ALL_SCOPES = ["organisation:read", "contacts:read", "webhooks:read", "webhooks:write"];

/** An access token of the client: for the /mcp resource unless `resource` says otherwise ("" for none). */
export async function tokenFor(
  client: AppClient,
  scopes: string[] = ALL_SCOPES,
  resource = `${base}/mcp`,
): Promise<string> {
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: client.id,
    client_secret: client.secret,
    scope: scopes.join(" "),
  });
  if (resource) form.set("resource", resource);
  const res = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
  });
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token;
}

/** The MCP SDK's client, connected (initialize) to /mcp with the token. */
export async function connect(token: string): Promise<Client> {
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** A tools/call's result, as the SDK's client returns it. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** A successful tool result's structured content, after checking its text copy says the same. */
export function structured<T>(result: CallToolResult): T {
  expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false);
  const text = result.content.find((c) => c.type === "text") as { text: string } | undefined;
  expect(JSON.parse(text!.text)).toEqual(result.structuredContent);
  return result.structuredContent as T;
}

/** A tool error's message. */
export function toolErrorText(result: CallToolResult): string {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return (result.content[0] as { text: string }).text;
}

/** A raw POST of a JSON-RPC body to /mcp, as an agent's HTTP client sends it. */
export function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export const toolsCall = (name: string, args: Record<string, unknown> = {}, id: number | string = 1) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

/** Contacts of an organisation, made through the organisation service (oldest first). */
export async function makeContacts(organisationId: string, names: string[]): Promise<string[]> {
  const orgs = platform.organisation.client(OrganisationService);
  const ids: string[] = [];
  for (const name of names) {
    const res = await orgs.createContact({
      organisationId,
      fields: { firstName: name, email: `${name.toLowerCase()}@contacts.test` },
    });
    ids.push(res.contact!.id);
  }
  return ids;
}

export async function makeClient(name: string, owner: string, scopes: string[] = []): Promise<AppClient> {
  const res = await platform.auth.client(AuthService).createClient({ name, ownerOrganisationId: owner, scopes });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

/** Registers the file's platform: started before its tests, stopped after. */
export function useMcpSuite(): void {
  beforeAll(async () => {
    platform = await startPlatform({
      auth: true,
      delivery: false,
      // Subscriptions' targets are loopback URLs (never contacted: nothing delivers).
      webhook: { config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "true" } },
      gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
    });
    base = platform.base;
    const orgs = platform.organisation.client(OrganisationService);
    orgId = (
      await orgs.createOrganisation({
        name: "Agent Cards",
        ownerEmail: "owner@agent.test",
        ownerPassword: "password-a",
      })
    ).organisation!.id;
    otherOrgId = (
      await orgs.createOrganisation({
        name: "Elsewhere Ltd",
        ownerEmail: "owner@elsewhere.test",
        ownerPassword: "password-e",
      })
    ).organisation!.id;
    app = await makeClient("Agent", orgId);
    sibling = await makeClient("Other agent", orgId);
    foreign = await makeClient("Agent elsewhere", otherOrgId);
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });
}
