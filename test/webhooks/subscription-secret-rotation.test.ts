// Rotating a subscription's signing secret, as its owner and its receiver see
// it: POST /oauth/webhooks/subscriptions/{id}/rotate-secret answers the new
// secret; during the overlap every POST carries two signatures (new, then
// old) and standardwebhooks verifies it with either secret; after it, only
// the new one signs. Real HTTP to the gateway with client_credentials tokens,
// in front of the real services on PostgreSQL and NATS, delivering to a
// local receiver; two platforms: the default overlap (a day) and one second.
// The operator's side: bizcard subscriptions rotate-secret.
import type { IncomingHttpHeaders } from "node:http";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { createWebhookApp } from "../../services/webhook/webhook-app.js";
import { newSigningSecret } from "../../services/webhook/webhook-service.js";
import { apiCaller, expectError, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { runBizcard, waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const TOKEN = "r".repeat(40);
const PATH = "/oauth/webhooks/subscriptions";
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;
const ONE_SIGNATURE = /^v1,[A-Za-z0-9+/]+={0,2}$/;
const TWO_SIGNATURES = /^v1,[A-Za-z0-9+/]+={0,2} v1,[A-Za-z0-9+/]+={0,2}$/;

const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: "10",
  DELIVERY_POLL_MS: "50",
};

interface Setup {
  platform: Platform;
  call: ReturnType<typeof apiCaller>["call"];
  orgId: string;
  /** Every scope. */
  app: AppClient;
  /** Another application of the same organisation. */
  sibling: AppClient;
  /** webhooks:read only. */
  reader: AppClient;
  createContact(firstName: string): Promise<unknown>;
}

async function start(config: Record<string, string>): Promise<Setup> {
  const platform = await startPlatform({
    token: TOKEN,
    config: { ...shared, ...config },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  const orgs = platform.organisation.client(OrganisationService);
  const orgId = (
    await orgs.createOrganisation({
      name: "Rotating Cards",
      ownerEmail: "owner@rotating.test",
      ownerPassword: "password-r",
    })
  ).organisation!.id;
  const clients = platform.auth.client(AuthService);
  const make = async (name: string, scopes: string[] = []): Promise<AppClient> => {
    const res = await clients.createClient({ name, ownerOrganisationId: orgId, scopes });
    return { id: res.client!.clientId, secret: res.clientSecret };
  };
  return {
    platform,
    call: apiCaller(() => platform.base).call,
    orgId,
    app: await make("Zap"),
    sibling: await make("Make"),
    reader: await make("Reader", ["webhooks:read"]),
    createContact: (firstName) =>
      orgs.createContact({ organisationId: orgId, fields: { firstName, lastName: "Lovelace" } }),
  };
}

let receiver: Receiver;
/** WEBHOOK_SECRET_OVERLAP_SECONDS unset: a day. */
let long: Setup;
/** WEBHOOK_SECRET_OVERLAP_SECONDS=1. */
let short: Setup;

beforeAll(async () => {
  receiver = await startReceiver();
  [long, short] = await Promise.all([start({}), start({ WEBHOOK_SECRET_OVERLAP_SECONDS: "1" })]);
}, 90_000);

afterAll(async () => {
  await long?.platform.stop();
  await short?.platform.stop();
  await receiver?.close();
});

const headers = (h: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));

/** A subscription of the setup's app to a new receiver path, and its first secret. */
async function subscribe(s: Setup, name: string) {
  const route = receiver.route(`/rotation/${name}`);
  const res = await s.call(s.app, "POST", PATH, { target_url: route.url, event_type: "contact.created" });
  const body = (await res.json()) as { id: number; secret: string; updated_at: string };
  expect(res.status, JSON.stringify(body)).toBe(201);
  return { route, id: body.id, secret: body.secret, updatedAt: body.updated_at };
}

interface Rotated {
  id: number;
  secret: string;
  previous_secret_expires_at: string | null;
}

async function rotate(s: Setup, client: AppClient, id: number | string): Promise<{ res: Response; body: Rotated }> {
  const res = await s.call(client, "POST", `${PATH}/${id}/rotate-secret`);
  return { res, body: (await res.clone().json()) as Rotated };
}

/** A contact event, and the POST it caused at the route (the n-th there). */
async function nextPost(s: Setup, route: { requests: { headers: IncomingHttpHeaders; body: string }[] }, name: string) {
  const before = route.requests.length;
  await s.createContact(name);
  await waitFor(() => route.requests.length > before || undefined, 15_000, `the POST for ${name}`);
  const request = route.requests[before]!;
  return { body: request.body, headers: headers(request.headers) };
}

const verifies = (secret: string, post: { body: string; headers: Record<string, string> }) => {
  try {
    new Webhook(secret).verify(post.body, post.headers);
    return true;
  } catch {
    return false;
  }
};

describe("POST /oauth/webhooks/subscriptions/{id}/rotate-secret", () => {
  it("answers the new secret and when the old one stops; during the overlap each POST verifies with either secret", async () => {
    const { route, id, secret: first, updatedAt } = await subscribe(long, "overlap");
    const before = Date.now();
    const { res, body } = await rotate(long, long.app, id);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(body).sort()).toEqual(["id", "previous_secret_expires_at", "secret"]);
    expect(body.id).toBe(id);
    expect(body.secret).toMatch(SECRET);
    expect(body.secret).not.toBe(first);
    expect(body.previous_secret_expires_at).toMatch(RFC3339);
    const expires = Date.parse(body.previous_secret_expires_at!);
    expect(expires).toBeGreaterThanOrEqual(before + 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 86_400_000 + 1000);
    // A change by its owner: updated_at moves; nothing else of the subscription changes.
    const read = (await (await long.call(long.app, "GET", `${PATH}/${id}`)).json()) as {
      updated_at: string;
      target_url: string;
      disabled_at: null;
      previous_secret_expires_at: string | null;
    };
    expect(Date.parse(read.updated_at)).toBeGreaterThan(Date.parse(updatedAt));
    expect(read).toMatchObject({ target_url: route.url, disabled_at: null });
    // The subscription itself says until when the old secret signs.
    expect(read.previous_secret_expires_at).toBe(body.previous_secret_expires_at);

    const post = await nextPost(long, route, "Overlap");
    // Both signatures, new first, space-separated; standardwebhooks accepts either secret, not a third.
    expect(post.headers["webhook-signature"]).toMatch(TWO_SIGNATURES);
    expect(verifies(body.secret, post)).toBe(true);
    expect(verifies(first, post)).toBe(true);
    expect(verifies(newSigningSecret(), post)).toBe(false);
    const [newOnly, oldOnly] = post.headers["webhook-signature"]!.split(" ");
    expect(verifies(body.secret, { ...post, headers: { ...post.headers, "webhook-signature": newOnly! } })).toBe(true);
    expect(verifies(first, { ...post, headers: { ...post.headers, "webhook-signature": oldOnly! } })).toBe(true);

    // Rotating again: the secret of the first rotation becomes the old one; the very first stops at once.
    const again = await rotate(long, long.app, id);
    expect(again.res.status).toBe(200);
    expect(again.body.secret).not.toBe(body.secret);
    const later = await nextPost(long, route, "Again");
    expect(later.headers["webhook-signature"]).toMatch(TWO_SIGNATURES);
    expect(verifies(again.body.secret, later)).toBe(true);
    expect(verifies(body.secret, later)).toBe(true);
    expect(verifies(first, later)).toBe(false);
  });

  it("after the overlap only the new secret signs: the old one no longer verifies", async () => {
    const { route, id, secret: old } = await subscribe(short, "after");
    const before = Date.now();
    const { res, body } = await rotate(short, short.app, id);
    expect(res.status, JSON.stringify(body)).toBe(200);
    const expires = Date.parse(body.previous_secret_expires_at!);
    expect(expires).toBeGreaterThanOrEqual(before + 1000 - 50);
    expect(expires).toBeLessThanOrEqual(Date.now() + 1000 + 50);
    // Once the overlap is over, the subscription no longer shows one (the service reads this process's clock).
    await waitFor(
      async () => {
        const res = await short.call(short.app, "GET", `${PATH}/${id}`);
        const read = (await res.json()) as { previous_secret_expires_at: string | null };
        return read.previous_secret_expires_at === null ? true : undefined;
      },
      10_000,
      "the overlap to end",
    );
    expect(Date.now()).toBeGreaterThanOrEqual(expires);

    const post = await nextPost(short, route, "After");
    expect(post.headers["webhook-signature"]).toMatch(ONE_SIGNATURE);
    expect(verifies(body.secret, post)).toBe(true);
    expect(verifies(old, post)).toBe(false);
  });

  it("another application's subscription, or none: 404, and nothing changes; a bad id: 400", async () => {
    const { route, id, secret } = await subscribe(long, "foreign");
    await expectError((await rotate(long, long.sibling, id)).res, 404, "not_found", "subscription not found");
    await expectError((await rotate(long, long.app, 987654)).res, 404, "not_found");
    await expectError(
      (await rotate(long, long.app, "abc")).res,
      400,
      "invalid_request",
      'id: expected a positive integer, not "abc"',
    );
    const post = await nextPost(long, route, "Untouched");
    expect(post.headers["webhook-signature"]).toMatch(ONE_SIGNATURE);
    expect(verifies(secret, post)).toBe(true);
  });

  it("needs webhooks:write: 403 with the scope named; without a token 401", async () => {
    const { route, id, secret } = await subscribe(long, "scopes");
    const refused = (await rotate(long, long.reader, id)).res;
    expect(refused.headers.get("www-authenticate")).toMatch(/error="insufficient_scope"/);
    expect(refused.headers.get("www-authenticate")).toMatch(/scope="webhooks:write"/);
    await expectError(refused, 403, "insufficient_scope");
    await expectError(await long.call(undefined, "POST", `${PATH}/${id}/rotate-secret`), 401, "invalid_token");
    const post = await nextPost(long, route, "StillFirst");
    expect(verifies(secret, post)).toBe(true);
    expect(post.headers["webhook-signature"]).toMatch(ONE_SIGNATURE);
  });
});

describe("WEBHOOK_SECRET_OVERLAP_SECONDS=0", () => {
  it("the old secret stops at once: no expiry in the answer, no previous secret for the sender", async () => {
    // A second webhook service on the same database, configured without an overlap.
    const config = long.platform.configWith({ WEBHOOK_SECRET_OVERLAP_SECONDS: "0" });
    const none = await long.platform.startService(
      (deps) => createWebhookApp(deps, { consumeGrantRevoked: false }),
      config,
    );
    const hooks = none.client(WebhookService);
    const { id } = await subscribe(long, "no-overlap");
    const owner = { organisationId: long.orgId, clientId: long.app.id } as Owner;
    const rotated = await hooks.rotateSubscriptionSecret({ owner, id: BigInt(id) });
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.oldSecretExpireTime).toBeUndefined();
    const { subscribers } = await hooks.listSubscribers({
      organisationId: long.orgId,
      eventType: EventType.CONTACT_CREATED,
    });
    const mine = subscribers.find((s) => s.subscriptionId === BigInt(id))!;
    expect(mine.secret).toBe(rotated.secret);
    expect(mine.previousSecret).toBe("");
    expect(mine.previousSecretExpireTime).toBeUndefined();
  });
});

/** bin/bizcard.js against the long platform's webhook service: exit status and stdout. */
async function bizcard(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return runBizcard(args, {
    WEBHOOK_RPC_URL: long.platform.webhook.server.url,
    INTERNAL_RPC_TOKEN: TOKEN,
    DATA_DIR: undefined,
  });
}

describe("bizcard subscriptions rotate-secret", () => {
  it("rotates as the REST route does, with its names and types; another pair's id is not_found; a bad id is a usage error", async () => {
    const { route, id, secret: old } = await subscribe(long, "cli");
    const cli = await bizcard([
      "subscriptions",
      "rotate-secret",
      String(id),
      "--org",
      long.orgId,
      "--client",
      long.app.id,
      "--json",
    ]);
    expect(cli.code, cli.stdout).toBe(0);
    const printed = JSON.parse(cli.stdout) as Rotated;
    expect(Object.keys(printed).sort()).toEqual(["id", "previous_secret_expires_at", "secret"]);
    expect(printed.id).toBe(id);
    expect(printed.secret).toMatch(SECRET);
    expect(printed.previous_secret_expires_at).toMatch(RFC3339);
    const post = await nextPost(long, route, "Cli");
    expect(verifies(printed.secret, post)).toBe(true);
    expect(verifies(old, post)).toBe(true);

    const text = await bizcard([
      "subscriptions",
      "rotate-secret",
      String(id),
      "--org",
      long.orgId,
      "--client",
      long.app.id,
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      new RegExp(
        `^subscription ${id}\\nsecret whsec_\\S+   \\(shown once\\)\\nthe old secret signs too until \\S+Z\\n$`,
      ),
    );

    const other = await bizcard([
      "subscriptions",
      "rotate-secret",
      String(id),
      "--org",
      long.orgId,
      "--client",
      long.sibling.id,
      "--json",
    ]);
    expect(other.code).toBe(1);
    expect(JSON.parse(other.stdout)).toMatchObject({ error: "not_found" });
    const bad = await bizcard([
      "subscriptions",
      "rotate-secret",
      "abc",
      "--org",
      long.orgId,
      "--client",
      long.app.id,
      "--json",
    ]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toMatchObject({ error: "invalid_usage" });
  });
});
