// The CORS suites (test/gateway/cors*.test.ts): a platform whose gateway
// listens where PUBLIC_URL says, /mcp allowing a browser agent's origin, and a
// client to get tokens with; a browser's preflight, and header lists read as
// a browser reads them. Each suite file calls useCorsSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { startPlatform, type Platform } from "./platform.js";

/** A page of another origin, not one of /mcp's. */
export const PAGE = "https://spa.example";
/** A browser agent's origin, one of MCP_ALLOWED_ORIGINS. */
export const AGENT = "https://agent.example";

export let platform: Platform;
export let base: string;
/** A confidential client of the organisation: its tokens come from client_credentials. */
export let client: { id: string; secret: string };

/** The platform and its client, started before the file's tests and stopped after them. */
export function useCorsSuite(): void {
  beforeAll(async () => {
    platform = await startPlatform({
      auth: true,
      webhook: true,
      delivery: false,
      config: { MCP_ALLOWED_ORIGINS: `${AGENT}, http://localhost:5173`, OAUTH_DYNAMIC_REGISTRATION: "true" },
      gateway: { publicUrlPort: true, serviceUrls: {} },
    });
    base = platform.base;
    const orgs = platform.organisation.client(OrganisationService);
    const org = (
      await orgs.createOrganisation({ name: "Cors Cards", ownerEmail: "owner@cors.test", ownerPassword: "password-c" })
    ).organisation!.id;
    const res = await platform.auth
      .client(AuthService)
      .createClient({ name: "Browser", ownerOrganisationId: org, scopes: [] });
    client = { id: res.client!.clientId, secret: res.clientSecret };
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });
}

/** A browser's preflight of `method` on `path` from `origin`, asking for `headers`. */
export function preflight(path: string, origin: string, method: string, headers = ""): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": method,
      ...(headers ? { "access-control-request-headers": headers } : {}),
    },
  });
}

/** A header's comma-separated list, lower case. */
export const list = (value: string | null) =>
  (value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

/** A client_credentials access token of organisation:read, for `resource` when given. */
export async function token(resource?: string): Promise<string> {
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: client.id,
    client_secret: client.secret,
    scope: "organisation:read",
  });
  if (resource) form.set("resource", resource);
  const res = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form,
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}
