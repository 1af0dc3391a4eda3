// A subscription deleted with deliveries still waiting (queued behind its
// in-flight cap, or a retry scheduled a minute ahead): the first of them a
// worker claims finds it gone, and its whole queue is cancelled at once,
// retries included; nothing more is POSTed. Before, each waiting delivery was
// cancelled only when it came due, a claim each, within the cap: a deleted
// subscription's backlog kept the workers busy long after it was gone. Real
// services on PostgreSQL and NATS, a local receiver.
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { apiCaller, type AppClient } from "../support/api-client.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const PATH = "/oauth/webhooks/subscriptions";

let platform: Platform;
let receiver: Receiver;
let db: pg.Client;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: "q".repeat(40),
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      DELIVERY_POLL_MS: "50",
      // One POST at a time: the others wait behind it, due.
      WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "1",
      // A failed attempt is retried a minute later (then given up).
      DELIVERY_RETRY_SCHEDULE_SECONDS: "60",
    },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  db = new pg.Client({ connectionString: platform.db.url });
  await db.connect();
}, 90_000);

afterAll(async () => {
  await db?.end();
  await platform?.stop();
  await receiver?.close();
});

it("the first waiting delivery of a deleted subscription cancels its whole queue, a retry a minute ahead included", async () => {
  const orgs = platform.organisation.client(OrganisationService);
  const orgId = (
    await orgs.createOrganisation({ name: "Gone Cards", ownerEmail: "owner@gone.test", ownerPassword: "password-q" })
  ).organisation!.id;
  const res = await platform.auth
    .client(AuthService)
    .createClient({ name: "Zap", ownerOrganisationId: orgId, scopes: [] });
  const app: AppClient = { id: res.client!.clientId, secret: res.clientSecret };
  const { call } = apiCaller(() => platform.base);
  // The first POST is answered 500 after 1.5 s (its retry then waits a minute); the rest would get 200.
  const route = receiver.route("/gone", (n) => (n === 1 ? { status: 500, delayMs: 1500 } : { status: 200 }));
  const created = await call(app, "POST", PATH, { target_url: route.url, event_type: "contact.created" });
  expect(created.status).toBe(201);
  const { id } = (await created.json()) as { id: number };

  await orgs.createContact({ organisationId: orgId, fields: { firstName: "Held" } });
  await waitFor(() => route.requests.length === 1 || undefined, 15_000, "the first POST");
  for (const firstName of ["Queued1", "Queued2", "Queued3"])
    await orgs.createContact({ organisationId: orgId, fields: { firstName } });
  const rows = async () =>
    (
      await db.query<{ status: string; n: number }>(
        `select "status", count(*)::int as "n" from "delivery"."delivery" where "subscription_id" = $1 group by "status"`,
        [id],
      )
    ).rows;
  await waitFor(
    async () => ((await rows()).reduce((n, r) => n + r.n, 0) === 4 ? true : undefined),
    15_000,
    "the four deliveries recorded",
  );

  const deleted = await call(app, "DELETE", `${PATH}/${id}`);
  expect(deleted.status).toBe(204);
  // The held POST is answered (500): its retry is due a minute later. The next in line finds the
  // subscription gone: all four cancelled within seconds, the retry with them.
  await waitFor(
    async () => ((await rows()).every((r) => r.status === "cancelled") ? true : undefined),
    10_000,
    "every delivery cancelled",
  );
  expect(await rows()).toEqual([{ status: "cancelled", n: 4 }]);
  expect(route.requests).toHaveLength(1);
});
