// `bizcard client list` and `bizcard client delete` (bin/bizcard.js as an
// operator runs it) against the real auth service: self-registered clients
// are listed apart from the operator's; deleting one ends its grants and
// tokens: the gateway (caching bearer checks, told over the bus) answers its
// access token 401 from then on, and the webhook service (told by the same
// bizcard.grant.revoked) deletes the subscriptions it made.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { authorizationCode, pkce } from "../support/browser-authorization.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { runBizcard, waitFor, type BizcardRun } from "../support/processes.js";

const TOKEN = "d".repeat(40);
const MEMBER = { email: "owner@cli-clients.test", password: "correct horse battery" };
const REDIRECT = "http://127.0.0.1:45123/callback";

let platform: Platform;
let operatorId: string;
let dynamic: { clientId: string; accessToken: string; refreshToken: string };

async function bizcard(args: string[]): Promise<BizcardRun> {
  return runBizcard(args, {
    AUTH_RPC_URL: platform.auth.server.url,
    ORGANISATION_RPC_URL: platform.organisation.server.url,
    AUTH_RPC_PORT: undefined,
    DATA_DIR: undefined,
    INTERNAL_RPC_TOKEN: TOKEN,
  });
}

function onlyJson(run: BizcardRun): Record<string, unknown> {
  const lines = run.stdout.split("\n").filter(Boolean);
  expect(lines, `stdout: ${run.stdout}\nstderr: ${run.stderr}`).toHaveLength(1);
  expect(run.stderr).toBe("");
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

const me = (accessToken: string) =>
  fetch(`${platform.base}/oauth/me`, { headers: { authorization: `Bearer ${accessToken}` } });

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    auth: true,
    config: { OAUTH_DYNAMIC_REGISTRATION: "true", BEARER_CACHE_MS: "600000", WEBHOOK_ALLOW_INSECURE_TARGETS: "true" },
    webhook: true,
    gateway: { publicUrlPort: true, bus: true },
    member: { organisation: "CLI Clients Org", ...MEMBER },
  });
  operatorId = (await platform.createClient("Operator App", ["https://operator.example/cb"])).clientId;
  const res = await fetch(`${platform.base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Agent To Delete",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      token_endpoint_auth_method: "none",
    }),
  });
  expect(res.status).toBe(201);
  const clientId = ((await res.json()) as { client_id: string }).client_id;
  const { verifier, challenge } = pkce();
  const code = await authorizationCode(
    platform.base,
    {
      client_id: clientId,
      redirect_uri: REDIRECT,
      scope: "organisation:read contacts:read webhooks:write",
      code_challenge: challenge,
      code_challenge_method: "S256",
    },
    MEMBER,
  );
  const tokenRes = await fetch(`${platform.base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: clientId,
    }).toString(),
  });
  const tokens = (await tokenRes.json()) as { access_token: string; refresh_token: string };
  expect(tokenRes.status).toBe(200);
  dynamic = { clientId, accessToken: tokens.access_token, refreshToken: tokens.refresh_token };
  const subscribed = await fetch(`${platform.base}/oauth/webhooks/subscriptions`, {
    method: "POST",
    headers: { authorization: `Bearer ${dynamic.accessToken}`, "content-type": "application/json" },
    body: JSON.stringify({ target_url: "http://127.0.0.1:45999/hook", event_type: "contact.created" }),
  });
  expect(subscribed.status, await subscribed.clone().text()).toBe(201);
}, 120_000);

const subscriptionsOf = async (clientId: string) =>
  (
    await platform.webhook
      .client(WebhookService)
      .listSubscriptions({ owner: { organisationId: platform.organisationId, clientId } })
  ).subscriptions;

afterAll(async () => {
  await platform?.stop();
});

describe("bizcard client list", { timeout: 60_000 }, () => {
  it("lists every client, newest first, with its registration and creation time", async () => {
    const run = await bizcard(["client", "list", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    const { clients } = onlyJson(run) as { clients: Record<string, unknown>[] };
    expect(clients.map((c) => [c.client_id, c.name, c.registration])).toEqual([
      [dynamic.clientId, "Agent To Delete", "dynamic"],
      [operatorId, "Operator App", "operator"],
    ]);
    expect(new Date(clients[0]!.created_at as string).getTime()).toBeGreaterThan(Date.now() - 120_000);
  });

  it("--self-registered leaves the operator's clients out; the text is one line each under a heading", async () => {
    const run = await bizcard(["client", "list", "--self-registered"]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^CLIENT_ID\s+REGISTRATION\s+CREATED\s+NAME$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(`^${dynamic.clientId}\\s+dynamic\\s+\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\s+Agent To Delete$`),
    );
    expect(run.stdout).not.toContain(operatorId);
  });

  it("the usage names both commands; delete needs its CLIENT_ID", async () => {
    const help = await bizcard(["--help"]);
    expect(help.stdout).toContain("bizcard client list [--self-registered] [--json]");
    expect(help.stdout).toContain("bizcard client delete CLIENT_ID [--json]");
    const missing = await bizcard(["client", "delete", "--json"]);
    expect(missing.code).toBe(2);
    expect(onlyJson(missing)).toEqual({ error: "invalid_usage", error_description: "missing CLIENT_ID" });
    const extra = await bizcard(["client", "delete", "a", "b"]);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toMatch(/^bizcard: unexpected argument "b"\nusage:\n {2}bizcard client delete CLIENT_ID/);
  });
});

describe("bizcard client delete", { timeout: 60_000 }, () => {
  it("deletes the client with its grants and tokens: its access token is 401 at /oauth/me, its refresh token refused, its webhooks gone", async () => {
    expect((await me(dynamic.accessToken)).status).toBe(200);
    expect(await subscriptionsOf(dynamic.clientId)).toHaveLength(1);
    const run = await bizcard(["client", "delete", dynamic.clientId, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(onlyJson(run)).toEqual({ client_id: dynamic.clientId, deleted: true });
    // The gateway cached the check above; bizcard.grant.revoked drops it.
    await waitFor(
      async () => (await me(dynamic.accessToken)).status === 401,
      15_000,
      "the deleted client's token refused",
    );
    await waitFor(
      async () => (await subscriptionsOf(dynamic.clientId)).length === 0,
      15_000,
      "the deleted client's subscriptions gone",
    );
    const refreshed = await fetch(`${platform.base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: dynamic.refreshToken,
        client_id: dynamic.clientId,
      }).toString(),
    });
    expect(refreshed.status).toBe(401);
    expect(((await refreshed.json()) as { error: string }).error).toBe("invalid_client");
    const list = onlyJson(await bizcard(["client", "list", "--json"])) as { clients: { client_id: string }[] };
    expect(list.clients.map((c) => c.client_id)).toEqual([operatorId]);
  });

  it("an unknown client is not_found, exit 1", async () => {
    const run = await bizcard(["client", "delete", "bc_nosuchclient", "--json"]);
    expect(run.code).toBe(1);
    expect(onlyJson(run)).toEqual({ error: "not_found", error_description: "client not found" });
    const text = await bizcard(["client", "delete", "bc_nosuchclient"]);
    expect(text.code).toBe(1);
    expect(text.stderr).toBe("bizcard: client not found (not_found)\n");
  });
});
