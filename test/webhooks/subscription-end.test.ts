// Why did it stop, and when? Every deletion of a subscription is recorded by
// the webhook service with its reason and time (deleted by its owner, its
// application's access revoked, or a 410 answer), and the delivery log tells
// its owner over REST and in `bizcard deliveries log`; while that record or
// the log is kept, the log is readable, and another application gets 404.
import { Code } from "@connectrpc/connect";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { SubscriptionEndReason, WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { apiCaller } from "../support/api-client.js";
import {
  app,
  attempts,
  auth,
  base,
  call,
  createContact,
  foreign,
  orgId,
  PATH,
  platform,
  receiver,
  sibling,
  subscribe,
  type Client,
  TOKEN,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";
import { runBizcard, waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";

useDeliveryApiSuite();

let pool: pg.Pool;
beforeAll(() => {
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
});
afterAll(async () => {
  await pool?.end();
});

/** bin/bizcard.js against the suite's webhook and delivery services: exit status and stdout. */
async function bizcard(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return runBizcard(args, {
    WEBHOOK_RPC_URL: platform.webhook.server.url,
    DELIVERY_RPC_URL: platform.delivery.server.url,
    INTERNAL_RPC_TOKEN: TOKEN,
    DATA_DIR: undefined,
  });
}

const log = (client: Client, id: number, caller = call) => caller(client, "GET", `${PATH}/${id}/deliveries`);

/** The time in a reason, checked to fall between `before` and `after`. */
function timeIn(reason: string, before: Date, after: Date): Date {
  const at = new Date(/^deleted at (\S+Z)[ :]/.exec(reason)![1]!);
  expect(at.getTime()).toBeGreaterThanOrEqual(before.getTime() - 5);
  expect(at.getTime()).toBeLessThanOrEqual(after.getTime() + 5);
  return at;
}

/** A subscription of `client` that received one event. */
async function deliveredOnce(client: Client, path: string, caller = call) {
  const route = receiver.route(path);
  const res = await caller(client, "POST", PATH, { target_url: route.url, event_type: "contact.created" });
  const subscription = (await res.json()) as { id: number };
  expect(res.status).toBe(201);
  await createContact(orgId, "Once");
  await waitFor(() => route.requests.length >= 1 || undefined, 15_000, "the delivery");
  await waitFor(
    async () => ((await (await log(client, subscription.id, caller)).json()) as unknown[]).length >= 1 || undefined,
    15_000,
    "the attempt logged",
  );
  return subscription;
}

/** The CLI's JSON for the owner: the same state and reason as the REST headers. */
async function expectCliSays(clientId: string, id: number, reason: string) {
  const cli = await bizcard([
    "deliveries",
    "log",
    "--org",
    orgId,
    "--client",
    clientId,
    "--subscription",
    String(id),
    "--json",
  ]);
  expect(cli.code).toBe(0);
  expect(JSON.parse(cli.stdout)).toMatchObject({ state: "deleted", reason });
  const text = await bizcard(["deliveries", "log", "--org", orgId, "--client", clientId, "--subscription", String(id)]);
  expect(text.stdout.split("\n")[0]).toBe(`subscription ${id} (deleted): ${reason}`);
}

describe("a deleted subscription says who ended it, and when", () => {
  it("DELETE by its owner: the log stays readable, the reason names its owner and the time; the CLI says the same; others get 404", async () => {
    const subscription = await deliveredOnce(app, "/end/deleted");
    const before = new Date();
    expect((await call(app, "DELETE", `${PATH}/${subscription.id}`)).status).toBe(204);
    const after = new Date();

    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("subscription-state")).toBe("deleted");
    const reason = res.headers.get("subscription-state-reason")!;
    expect(reason).toMatch(/^deleted at \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z by its owner \(DELETE\)$/);
    timeIn(reason, before, after);
    expect(((await res.json()) as { outcome: string }[]).map((a) => a.outcome)).toEqual(["succeeded"]);
    await expectCliSays(app.id, subscription.id, reason);

    for (const other of [sibling, foreign]) {
      const refused = await log(other, subscription.id);
      expect(refused.status).toBe(404);
      expect(refused.headers.get("subscription-state")).toBeNull();
    }
    const other = await bizcard([
      "deliveries",
      "log",
      "--org",
      orgId,
      "--client",
      sibling.id,
      "--subscription",
      String(subscription.id),
      "--json",
    ]);
    expect(other.code).toBe(1);
    expect(JSON.parse(other.stdout)).toMatchObject({ error: "not_found" });
  });

  it("the application's access revoked: the reason says so, with the time", async () => {
    const clients = auth.client(AuthService);
    const created = await clients.createClient({ name: "Revoked soon", ownerOrganisationId: orgId, scopes: [] });
    const revoked: Client = { id: created.client!.clientId, secret: created.clientSecret };
    const subscription = await deliveredOnce(revoked, "/end/revoked");
    const before = new Date();
    await clients.revokeGrant({ organisationId: orgId, clientId: revoked.id });

    // A new token (the old one was revoked with the grant) reads what became of it.
    const fresh = apiCaller(() => base).call;
    const res = await waitFor(
      async () => {
        const answer = await log(revoked, subscription.id, fresh);
        return answer.headers.get("subscription-state") === "deleted" ? answer : undefined;
      },
      15_000,
      "the subscription deleted with the grant",
    );
    const after = new Date();
    expect(res.status).toBe(200);
    const reason = res.headers.get("subscription-state-reason")!;
    expect(reason).toMatch(/^deleted at \S+Z: the application's access to the organisation was revoked$/);
    timeIn(reason, before, after);
    await expectCliSays(revoked.id, subscription.id, reason);
    expect((await log(app, subscription.id)).status).toBe(404);
  });

  it("410 Gone from the target: the reason says so, with the time of the deletion", async () => {
    const gone = receiver.route("/end/gone", () => ({ status: 410 }));
    const before = new Date();
    const subscription = await subscribe(app, gone.url);
    await createContact(orgId, "Gone");
    await waitFor(
      async () => (await call(app, "GET", `${PATH}/${subscription.id}`)).status === 404 || undefined,
      15_000,
      "the subscription deleted",
    );
    const after = new Date();

    const end = (
      await platform.webhook
        .client(WebhookService)
        .getSubscriptionEnd({ owner: { organisationId: orgId, clientId: app.id }, id: BigInt(subscription.id) })
    ).end!;
    expect(end.reason).toBe(SubscriptionEndReason.GONE);
    expect(end.targetUrl).toBe(gone.url);

    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    const reason = res.headers.get("subscription-state-reason")!;
    expect(reason).toMatch(/^deleted at \S+Z: the target answered 410 Gone \(it asked for no more events\)$/);
    expect(timeIn(reason, before, after).toISOString()).toBe(
      new Date(Number(end.endTime!.seconds) * 1000 + end.endTime!.nanos / 1e6).toISOString(),
    );
    await expectCliSays(app.id, subscription.id, reason);
  });
});

describe("what is kept", () => {
  it("the recorded end keeps a deleted subscription's log readable once the log itself is pruned", async () => {
    const subscription = await subscribe(app, receiver.route("/end/no-log").url);
    expect((await call(app, "DELETE", `${PATH}/${subscription.id}`)).status).toBe(204);
    // Never delivered to: an empty log, but the end says what became of it.
    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect(res.headers.get("subscription-state")).toBe("deleted");
    expect(res.headers.get("subscription-state-reason")).toMatch(/^deleted at \S+Z by its owner \(DELETE\)$/);
    expect((await log(sibling, subscription.id)).status).toBe(404);
  });

  it("a subscription deleted before ends were recorded: the reason is still guessed from its log", async () => {
    const subscription = await deliveredOnce(app, "/end/legacy");
    expect((await call(app, "DELETE", `${PATH}/${subscription.id}`)).status).toBe(204);
    await pool.query(`delete from "webhook"."subscription_end" where "id" = $1`, [subscription.id]);
    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("subscription-state-reason")).toBe(
      "deleted by its owner (DELETE), or when the application's access to the organisation was revoked",
    );
    expect((await attempts(app, subscription.id)).map((a) => a.outcome)).toEqual(["succeeded"]);
  });
});

describe("GetSubscriptionEnd", () => {
  const rpc = () => platform.webhook.client(WebhookService);
  const owner = () => ({ organisationId: orgId, clientId: app.id });

  it("answers the owner's ended subscription, as it was; NOT_FOUND for another pair's, a live one or an unknown id", async () => {
    const target = receiver.route("/end/rpc").url;
    const created = await rpc().createSubscription({ owner: owner(), targetUrl: target, eventType: 1 });
    const id = created.subscription!.id;
    expect((await rpcError(rpc().getSubscriptionEnd({ owner: owner(), id }))).code).toBe(Code.NotFound);
    // An older caller without a reason: its owner.
    await rpc().deleteSubscription({ owner: owner(), id });
    const { end } = await rpc().getSubscriptionEnd({ owner: owner(), id });
    expect(end).toMatchObject({ id, targetUrl: target, eventType: 1, reason: SubscriptionEndReason.DELETED_BY_OWNER });
    expect(end!.endTime).toBeDefined();
    // Deleting again deletes nothing and records nothing more.
    expect(
      (await rpcError(rpc().deleteSubscription({ owner: owner(), id, reason: SubscriptionEndReason.GONE }))).code,
    ).toBe(Code.NotFound);
    expect((await rpc().getSubscriptionEnd({ owner: owner(), id })).end!.reason).toBe(
      SubscriptionEndReason.DELETED_BY_OWNER,
    );

    for (const other of [
      { organisationId: orgId, clientId: sibling.id },
      { organisationId: crypto.randomUUID(), clientId: app.id },
    ]) {
      expect((await rpcError(rpc().getSubscriptionEnd({ owner: other, id }))).code).toBe(Code.NotFound);
    }
    expect((await rpcError(rpc().getSubscriptionEnd({ owner: owner(), id: 987654321n }))).code).toBe(Code.NotFound);
    expect((await rpcError(rpc().getSubscriptionEnd({ owner: owner(), id: 0n }))).code).toBe(Code.InvalidArgument);
    expect((await rpcError(rpc().getSubscriptionEnd({ id }))).code).toBe(Code.InvalidArgument);
  });

  it("DeletePairSubscriptions records each end as a revoked grant", async () => {
    const pair = { organisationId: orgId, clientId: `pair-${crypto.randomUUID()}` };
    const ids: bigint[] = [];
    for (const path of ["/end/pair/a", "/end/pair/b"]) {
      ids.push(
        (await rpc().createSubscription({ owner: pair, targetUrl: receiver.route(path).url, eventType: 1 }))
          .subscription!.id,
      );
    }
    expect((await rpc().deletePairSubscriptions({ owner: pair })).deletedCount).toBe(2);
    for (const id of ids)
      expect((await rpc().getSubscriptionEnd({ owner: pair, id })).end!.reason).toBe(
        SubscriptionEndReason.GRANT_REVOKED,
      );
  });
});
