// CORS in a real browser (Debian's headless Chromium, playwright-core): a
// page of another origin does what a browser MCP client does. It reads the
// protected resource metadata, gets a token at /oauth/token, reads the 401's
// WWW-Authenticate at /mcp and then talks MCP, because its origin is in
// MCP_ALLOWED_ORIGINS; a page of an origin not listed is refused /mcp by the
// browser itself, while the REST API answers it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "../support/chromium.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";

let platform: Platform;
let browser: Browser;
let pages: Server;
/** The agent's page: http://127.0.0.1:<port>, listed in MCP_ALLOWED_ORIGINS. */
let allowedPage: string;
/** The same server as http://localhost:<port>: another origin, not listed. */
let otherPage: string;
let client: { id: string; secret: string };

beforeAll(async () => {
  pages = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<!doctype html><title>agent</title>"),
  );
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  const port = (pages.address() as AddressInfo).port;
  allowedPage = `http://127.0.0.1:${port}`;
  otherPage = `http://localhost:${port}`;
  platform = await startPlatform({
    auth: true,
    webhook: false,
    delivery: false,
    config: { MCP_ALLOWED_ORIGINS: allowedPage },
    gateway: { publicUrlPort: true, serviceUrls: {} },
  });
  const orgs = platform.organisation.client(OrganisationService);
  const org = (
    await orgs.createOrganisation({
      name: "Browser Agents",
      ownerEmail: "owner@browser-agent.test",
      ownerPassword: "password-b",
    })
  ).organisation!.id;
  const res = await platform.auth
    .client(AuthService)
    .createClient({ name: "Web agent", ownerOrganisationId: org, scopes: [] });
  client = { id: res.client!.clientId, secret: res.clientSecret };
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await new Promise((resolve) => pages?.close(resolve));
});

async function openPage(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  return page;
}

/** What the page's script does, as a browser MCP client would; each step's outcome, or the error fetch threw. */
function agentSteps(page: Page, args: { base: string; clientId: string; secret: string }) {
  return page.evaluate(async ({ base, clientId, secret }) => {
    const attempt = async <T>(step: () => Promise<T>): Promise<T | { failed: string }> => {
      try {
        return await step();
      } catch (err) {
        return { failed: String(err) };
      }
    };
    const mcpHeaders = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    };
    const initialize = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "web", version: "0" } },
    });
    const metadata = await attempt(async () => {
      const res = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`, {
        headers: { "mcp-protocol-version": "2025-11-25" },
      });
      return ((await res.json()) as { resource: string }).resource;
    });
    const token = await attempt(async () => {
      const res = await fetch(`${base}/oauth/token`, {
        method: "POST",
        headers: {
          authorization: `Basic ${btoa(`${clientId}:${secret}`)}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource: `${base}/mcp` }),
      });
      return ((await res.json()) as { access_token: string }).access_token;
    });
    const challenge = await attempt(async () => {
      const res = await fetch(`${base}/mcp`, { method: "POST", headers: mcpHeaders, body: initialize });
      return { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate") };
    });
    const server = await attempt(async () => {
      const res = await fetch(`${base}/mcp`, {
        method: "POST",
        headers: { ...mcpHeaders, authorization: `Bearer ${token as string}` },
        body: initialize,
      });
      return ((await res.json()) as { result: { serverInfo: { name: string } } }).result.serverInfo.name;
    });
    const restApi = await attempt(async () => {
      const res = await fetch(`${base}/oauth/me`);
      return { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate") };
    });
    return { metadata, token: typeof token === "string" ? "issued" : token, challenge, server, restApi };
  }, args);
}

it("a page of an allowed origin discovers, gets a token, reads the challenge and talks MCP", async () => {
  const page = await openPage(allowedPage);
  const base = platform.base;
  const steps = await agentSteps(page, { base, clientId: client.id, secret: client.secret });
  expect(steps).toEqual({
    metadata: `${base}/mcp`,
    token: "issued",
    challenge: {
      status: 401,
      wwwAuthenticate: `Bearer realm="bizcard", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    },
    server: "bizcard",
    restApi: {
      status: 401,
      wwwAuthenticate: expect.stringContaining(`resource_metadata="${base}/.well-known/oauth-protected-resource"`),
    },
  });
  await page.close();
});

it("a page of another origin reads the documents and the REST API, but the browser refuses it /mcp", async () => {
  const page = await openPage(otherPage);
  const steps = await agentSteps(page, { base: platform.base, clientId: client.id, secret: client.secret });
  expect(steps.metadata).toBe(`${platform.base}/mcp`);
  expect(steps.token).toBe("issued");
  expect(steps.challenge).toEqual({ failed: expect.stringMatching(/TypeError: Failed to fetch/) });
  expect(steps.server).toEqual({ failed: expect.stringMatching(/TypeError: Failed to fetch/) });
  expect(steps.restApi).toMatchObject({ status: 401 });
  await page.close();
});
