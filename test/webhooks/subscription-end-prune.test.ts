// The recorded ends of deleted subscriptions are kept as long as the delivery
// log they explain: the webhook service prunes them on its timer
// (PRUNE_INTERVAL_SECONDS) once older than DELIVERY_LOG_RETENTION_DAYS. A
// deleted subscription with neither its end nor a log left is 404 to its owner.
import { Code } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { apiCaller, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";

const TOKEN = "e".repeat(40);
const PATH = "/oauth/webhooks/subscriptions";

let platform: Platform;
let pool: pg.Pool;
let app: AppClient;
let organisationId: string;
const { call } = apiCaller(() => platform.base);

beforeAll(async () => {
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      PRUNE_INTERVAL_SECONDS: "1",
      PRUNE_BATCH_SIZE: "2",
      DELIVERY_LOG_RETENTION_DAYS: "7",
    },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
  const orgs = platform.organisation.client(OrganisationService);
  organisationId = (
    await orgs.createOrganisation({
      name: "Pruned Cards",
      ownerEmail: "owner@pruned.test",
      ownerPassword: "password-p",
    })
  ).organisation!.id;
  const created = await platform.auth
    .client(AuthService)
    .createClient({ name: "Pruned", ownerOrganisationId: organisationId, scopes: [] });
  app = { id: created.client!.clientId, secret: created.clientSecret };
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await platform?.stop();
});

/** A subscription of the app, deleted by its owner before anything was sent to it: no delivery log, only its end. */
async function deletedSubscription(n: number): Promise<number> {
  const res = await call(app, "POST", PATH, {
    target_url: `http://127.0.0.1:9999/pruned/${n}`,
    event_type: "contact.updated",
  });
  const body = (await res.json()) as { id: number };
  expect(res.status, JSON.stringify(body)).toBe(201);
  const { id } = body;
  expect((await call(app, "DELETE", `${PATH}/${id}`)).status).toBe(204);
  return id;
}

const log = (id: number) => call(app, "GET", `${PATH}/${id}/deliveries`);

describe("pruning the recorded ends", () => {
  it("ends older than DELIVERY_LOG_RETENTION_DAYS go (in batches), younger ones stay; the log of a pruned one is 404", async () => {
    const old = [await deletedSubscription(1), await deletedSubscription(2), await deletedSubscription(3)];
    const recent = await deletedSubscription(4);
    const today = await deletedSubscription(5);
    for (const id of [...old, recent, today]) expect((await log(id)).headers.get("subscription-state")).toBe("deleted");

    await pool.query(
      `update "webhook"."subscription_end" set "ended_at" = now() - interval '10 days' where "id" = any($1)`,
      [old],
    );
    await pool.query(`update "webhook"."subscription_end" set "ended_at" = now() - interval '3 days' where "id" = $1`, [
      recent,
    ]);

    const owner = { organisationId, clientId: app.id };
    const webhook = platform.webhook.client(WebhookService);
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          `select count(*)::int as n from "webhook"."subscription_end" where "id" = any($1)`,
          [old],
        );
        return rows[0].n === 0 || undefined;
      },
      15_000,
      "the old ends pruned",
    );

    for (const id of old) {
      expect((await rpcError(webhook.getSubscriptionEnd({ owner, id: BigInt(id) }))).code).toBe(Code.NotFound);
      const res = await log(id);
      expect(res.status).toBe(404);
      expect(res.headers.get("subscription-state")).toBeNull();
    }
    for (const id of [recent, today]) {
      expect((await webhook.getSubscriptionEnd({ owner, id: BigInt(id) })).end!.id).toBe(BigInt(id));
      const res = await log(id);
      expect(res.status).toBe(200);
      expect(res.headers.get("subscription-state-reason")).toMatch(/^deleted at \S+Z by its owner \(DELETE\)$/);
    }
    // A live subscription has no end.
    const live = await webhook.createSubscription({
      owner,
      targetUrl: "http://127.0.0.1:9999/pruned/live",
      eventType: EventType.CONTACT_CREATED,
    });
    expect((await rpcError(webhook.getSubscriptionEnd({ owner, id: live.subscription!.id }))).code).toBe(Code.NotFound);
  });
});
