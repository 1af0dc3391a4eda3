// Signing secrets encrypted at rest (WEBHOOK_SECRET_ENCRYPTION_KEY), as the
// database, a receiver and an operator see them: the row holds a sealed
// value, never the secret; POSTs still verify with the secret the API
// answered (standardwebhooks); a new key goes first, the old one stays
// listed until `bizcard secrets reencrypt` has re-sealed every secret, then
// leaves; a clear secret of an earlier version is read and re-sealed; a key
// list that cannot open a secret is an error, never a garbage signature.
// Real services on PostgreSQL and NATS; each step's webhook service (the key
// list under test) and a delivery service that asks it, started afresh.
import { randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { registry } from "../../services/shared/metrics/metrics.js";
import { keyId, secretBox } from "../../services/webhook/subscriptions/secret-box.js";
import { newSigningSecret } from "../../services/webhook/webhook-service.js";
import { apiCaller, type AppClient } from "../support/api-client.js";
import {
  createDeliveryApp,
  createWebhookApp,
  startPlatform,
  type Platform,
  type StartedService,
} from "../support/platform.js";
import { runBizcard, waitFor } from "../support/processes.js";
import { startReceiver, type Received, type Receiver } from "../support/receiver.js";

const TOKEN = "s".repeat(40);
const PATH = "/oauth/webhooks/subscriptions";
// Keys as an operator writes them: base64 (openssl rand -base64 32), or base64url.
const A = randomBytes(32).toString("base64");
const B = randomBytes(32).toString("base64url");
const C = randomBytes(32).toString("base64");
const ONE_SIGNATURE = /^v1,[A-Za-z0-9+/]+={0,2}$/;
const TWO_SIGNATURES = /^v1,[A-Za-z0-9+/]+={0,2} v1,[A-Za-z0-9+/]+={0,2}$/;

const idOf = (key: string) => keyId(Buffer.from(key, "base64"));

let receiver: Receiver;
let platform: Platform;
let pool: pg.Pool;
let call: ReturnType<typeof apiCaller>["call"];

beforeAll(async () => {
  receiver = await startReceiver();
  // The gateway's webhook service seals with A; deliveries go through each step's own (step()).
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_SECRET_ENCRYPTION_KEY: A,
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
      DELIVERY_TIMEOUT_MS: "1000",
      DELIVERY_CLAIM_LEASE_SECONDS: "10",
      DELIVERY_POLL_MS: "50",
      // Every batch reads its subscribers: a row a test rewrites by SQL is what the next POST uses.
      DELIVERY_SUBSCRIBER_CACHE_MS: "0",
    },
    auth: true,
    webhook: true,
    delivery: false,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  call = apiCaller(() => platform.base).call;
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
}, 90_000);

afterAll(async () => {
  await pool?.end();
  await platform?.stop();
  await receiver?.close();
});

interface Step {
  webhook: StartedService<Awaited<ReturnType<typeof createWebhookApp>>>;
  hooks: Client<typeof WebhookService>;
}
let current: (Step & { stop(): Promise<void> }) | undefined;

/** A webhook service with WEBHOOK_SECRET_ENCRYPTION_KEY=`keys`, and a delivery service that reads its subscribers from it (the step before stopped). */
async function step(keys: string): Promise<Step> {
  await current?.stop();
  current = undefined;
  const webhook = await platform.startService(
    (deps) => createWebhookApp(deps, { consumeGrantRevoked: false }),
    platform.configWith({ WEBHOOK_SECRET_ENCRYPTION_KEY: keys }),
  );
  const delivery = await platform.startService(
    createDeliveryApp,
    platform.configWith({ WEBHOOK_RPC_URL: webhook.server.url }),
  );
  current = {
    webhook,
    hooks: webhook.client(WebhookService),
    stop: async () => {
      await delivery.stop();
      await webhook.stop();
    },
  };
  return current;
}

/** An organisation of its own and an application of it. */
async function tenant(name: string) {
  const orgs = platform.organisation.client(OrganisationService);
  const organisationId = (
    await orgs.createOrganisation({ name, ownerEmail: `${name}@sealed.test`, ownerPassword: "password-s" })
  ).organisation!.id;
  const made = await platform.auth.client(AuthService).createClient({ name, ownerOrganisationId: organisationId });
  const app: AppClient = { id: made.client!.clientId, secret: made.clientSecret };
  return {
    organisationId,
    app,
    owner: { organisationId, clientId: app.id },
    createContact: (firstName: string) =>
      orgs.createContact({ organisationId, fields: { firstName, lastName: "Lovelace" } }),
  };
}
type Tenant = Awaited<ReturnType<typeof tenant>>;

async function subscribe(s: Step, t: Tenant, path: string) {
  const route = receiver.route(path);
  const res = await s.hooks.createSubscription({
    owner: t.owner,
    targetUrl: route.url,
    eventType: EventType.CONTACT_CREATED,
  });
  return { route, id: res.subscription!.id, secret: res.secret };
}

const headers = (h: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));

/** A contact event of the tenant, and the POST it caused at the route. */
async function nextPost(t: Tenant, route: { requests: Received[] }, name: string) {
  const before = route.requests.length;
  await t.createContact(name);
  await waitFor(() => route.requests.length > before || undefined, 20_000, `the POST for ${name}`);
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

async function rowOf(id: bigint | number): Promise<{ secret: string; previous_secret: string | null }> {
  const res = await pool.query(`select "secret", "previous_secret" from "webhook"."subscription" where "id" = $1`, [
    id.toString(),
  ]);
  expect(res.rows, `subscription ${id}`).toHaveLength(1);
  return res.rows[0];
}

/** Subscriptions with a secret (or previous secret) not sealed under `key`: what a reencrypt to it has to do. */
async function notSealedUnder(key: string): Promise<number> {
  const prefix = `v1.${idOf(key)}.`;
  const res = await pool.query(
    `select count(*)::int as "n" from "webhook"."subscription" where not starts_with("secret", $1) or not starts_with("previous_secret", $1)`,
    [prefix],
  );
  return res.rows[0].n;
}

/** `stored` is `secret` sealed under `key`, and holds neither the secret nor its bytes in any spelling. */
function expectSealed(stored: string | null, key: string, secret: string): void {
  expect(stored).toMatch(
    new RegExp(`^v1\\.${idOf(key).replace(/-/g, "\\-")}\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$`),
  );
  const bytes = Buffer.from(secret.slice("whsec_".length), "base64");
  expect(bytes).toHaveLength(32);
  for (const form of [
    "whsec_",
    bytes.toString("base64"),
    bytes.toString("base64url"),
    bytes.toString("hex"),
    bytes.toString("latin1"),
  ])
    expect(stored).not.toContain(form);
  expect(secretBox([Buffer.from(key, "base64")]).open(stored!)).toBe(secret);
}

/** bin/bizcard.js against the step's webhook service. */
const bizcard = (s: Step, args: string[]) =>
  runBizcard(args, { WEBHOOK_RPC_URL: s.webhook.server.url, INTERNAL_RPC_TOKEN: TOKEN, DATA_DIR: undefined });

/** ListSubscribersOfMany calls (the fan-out's) the webhook services of this process refused with FAILED_PRECONDITION. */
async function refusedFanOutReads(): Promise<number> {
  const text = await registry.metrics();
  const line =
    /^rpc_server_duration_seconds_count\{service="webhook",method="ListSubscribersOfMany",code="failed_precondition"\} (\d+)$/m.exec(
      text,
    );
  return line ? Number(line[1]) : 0;
}

describe("signing secrets at rest", () => {
  it("a subscription made through the REST API is stored sealed, rotated too, and its POSTs verify with the secrets the API answered", async () => {
    await step(A);
    const t = await tenant("rest");
    const route = receiver.route("/sealed/rest");
    const res = await call(t.app, "POST", PATH, { target_url: route.url, event_type: "contact.created" });
    const body = (await res.json()) as { id: number; secret: string };
    expect(res.status, JSON.stringify(body)).toBe(201);
    const row = await rowOf(body.id);
    expectSealed(row.secret, A, body.secret);
    expect(row.previous_secret).toBeNull();

    const post = await nextPost(t, route, "Sealed");
    expect(post.headers["webhook-signature"]).toMatch(ONE_SIGNATURE);
    expect(verifies(body.secret, post)).toBe(true);
    expect(verifies(newSigningSecret(), post)).toBe(false);

    // A rotation seals the new secret, and keeps the old one sealed while it still signs.
    const rotated = await call(t.app, "POST", `${PATH}/${body.id}/rotate-secret`);
    const next = (await rotated.json()) as { secret: string };
    expect(rotated.status, JSON.stringify(next)).toBe(200);
    const after = await rowOf(body.id);
    expectSealed(after.secret, A, next.secret);
    expectSealed(after.previous_secret, A, body.secret);
    const both = await nextPost(t, route, "Rotated");
    expect(both.headers["webhook-signature"]).toMatch(TWO_SIGNATURES);
    expect(verifies(next.secret, both)).toBe(true);
    expect(verifies(body.secret, both)).toBe(true);
  });

  it("a new key first: a secret sealed with A still delivers under [B, A]; bizcard secrets reencrypt re-seals it under B; then [B] alone delivers", async () => {
    const t = await tenant("rotation");
    const { route, id, secret } = await subscribe(await step(A), t, "/sealed/rotation");
    expectSealed((await rowOf(id)).secret, A, secret);

    const rotating = await step(`${B},${A}`);
    expect(verifies(secret, await nextPost(t, route, "BeforeReseal"))).toBe(true);
    // Reading re-seals nothing: the row is A's until the command runs.
    expectSealed((await rowOf(id)).secret, A, secret);

    const pending = await notSealedUnder(B);
    expect(pending).toBeGreaterThanOrEqual(1);
    const run = await bizcard(rotating, ["secrets", "reencrypt", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ reencrypted: pending, key_id: idOf(B) });
    expectSealed((await rowOf(id)).secret, B, secret);
    expect(await notSealedUnder(B)).toBe(0);
    // Twice is safe: nothing left to do.
    const again = await bizcard(rotating, ["secrets", "reencrypt"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(
      `re-sealed 0 subscriptions' signing secrets under key ${idOf(B)}; every secret is sealed under it now\n`,
    );

    // A leaves the list.
    await step(B);
    const post = await nextPost(t, route, "AfterReseal");
    expect(post.headers["webhook-signature"]).toMatch(ONE_SIGNATURE);
    expect(verifies(secret, post)).toBe(true);
  });

  it("a secret stored in clear by an earlier version (and the one before it, still signing) is read, signs, and is sealed by the command", async () => {
    const t = await tenant("legacy");
    const s = await step(`${B},${A}`);
    const { route, id } = await subscribe(s, t, "/sealed/legacy");
    const [clear, clearBefore] = [newSigningSecret(), newSigningSecret()];
    await pool.query(
      `update "webhook"."subscription" set "secret" = $1, "previous_secret" = $2, "previous_secret_expires_at" = now() + interval '1 hour' where "id" = $3`,
      [clear, clearBefore, id.toString()],
    );

    const post = await nextPost(t, route, "Clear");
    expect(post.headers["webhook-signature"]).toMatch(TWO_SIGNATURES);
    expect(verifies(clear, post)).toBe(true);
    expect(verifies(clearBefore, post)).toBe(true);

    const pending = await notSealedUnder(B);
    expect(pending).toBeGreaterThanOrEqual(1);
    const run = await bizcard(s, ["secrets", "reencrypt", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ reencrypted: pending, key_id: idOf(B) });
    const row = await rowOf(id);
    expectSealed(row.secret, B, clear);
    expectSealed(row.previous_secret, B, clearBefore);

    const sealed = await nextPost(t, route, "Sealed");
    expect(sealed.headers["webhook-signature"]).toMatch(TWO_SIGNATURES);
    expect(verifies(clear, sealed)).toBe(true);
    expect(verifies(clearBefore, sealed)).toBe(true);
  });

  it("a key list that cannot open a secret is a clear error, never a garbage signature: the POST waits for the right key", async () => {
    const t = await tenant("wrong");
    const { route, id, secret } = await subscribe(await step(`${B},${A}`), t, "/sealed/wrong");
    const stored = await rowOf(id);

    const wrong = await step(C);
    const err = await wrong.hooks
      .listSubscribers({ organisationId: t.organisationId, eventType: EventType.CONTACT_CREATED })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.FailedPrecondition);
    expect(err?.rawMessage).toBe(
      `the signing secret of subscription ${id} cannot be read: sealed with key ${idOf(B)}, which WEBHOOK_SECRET_ENCRYPTION_KEY does not list (it lists ${idOf(C)}): add that key back after the current one`,
    );
    for (const key of [A, B, C]) expect(err?.rawMessage).not.toContain(key);

    // The command stops at the first secret it cannot open, and changes nothing.
    const run = await bizcard(wrong, ["secrets", "reencrypt", "--json"]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      error: "failed_precondition",
      error_description: expect.stringMatching(
        /^the signing secret of subscription \d+ cannot be read: sealed with key \S+, which WEBHOOK_SECRET_ENCRYPTION_KEY does not list/,
      ),
    });
    expect(await rowOf(id)).toEqual(stored);

    // An event now: the delivery service asks for its subscribers, is refused, and sends nothing.
    const refusedBefore = await refusedFanOutReads();
    await t.createContact("Held");
    await waitFor(
      async () => (await refusedFanOutReads()) > refusedBefore || undefined,
      20_000,
      "the fan-out's refused read",
    );
    expect(route.requests).toHaveLength(0);

    // With B listed again (after a new current key), the held event arrives, signed with the real secret.
    await step(`${C},${B}`);
    await waitFor(() => route.requests.length > 0 || undefined, 30_000, "the held POST");
    expect(JSON.parse(route.requests[0]!.body)).toMatchObject({
      type: "contact.created",
      data: { first_name: "Held" },
    });
    for (const r of route.requests) expect(verifies(secret, { body: r.body, headers: headers(r.headers) })).toBe(true);
  });
});
