// Why did it stop? A subscription deleted by a 410 answer, deleted by its
// owner, or disabled: its owner can still read its delivery log over REST,
// with the reason (Subscription-State, Subscription-State-Reason); another
// application gets 404.
import { describe, expect, it } from "vitest";
import { runBizcard, waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  foreign,
  orgId,
  otherOrgId,
  PATH,
  platform,
  receiver,
  sibling,
  subscribe,
  type SubscriptionBody,
  TOKEN,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite();

/** bin/bizcard.js against the suite's webhook and delivery services: exit status and stdout. */
async function bizcard(args: string[]): Promise<{ code: number | null; stdout: string }> {
  return runBizcard(args, {
    WEBHOOK_RPC_URL: platform.webhook.server.url,
    DELIVERY_RPC_URL: platform.delivery.server.url,
    INTERNAL_RPC_TOKEN: TOKEN,
    DATA_DIR: undefined,
  });
}

const log = (client: typeof app, id: number) => call(client, "GET", `${PATH}/${id}/deliveries`);

describe("the delivery log of a subscription that stopped", () => {
  it("410: the subscription is 404, its log stays readable by its owner with the reason; another application gets 404", async () => {
    const gone = receiver.route("/history/gone", () => ({ status: 410 }));
    const subscription = await subscribe(app, gone.url);
    await createContact(orgId, "Gone");
    await waitFor(
      async () => (await call(app, "GET", `${PATH}/${subscription.id}`)).status === 404 || undefined,
      15_000,
      "the subscription deleted",
    );

    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("subscription-state")).toBe("deleted");
    expect(res.headers.get("subscription-state-reason")).toMatch(
      /^deleted at \S+: the target answered 410 Gone \(it asked for no more events\)$/,
    );
    const body = (await res.json()) as { outcome: string; status_code: number }[];
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({ outcome: "gone", status_code: 410 });

    for (const other of [sibling, foreign]) {
      const refused = await log(other, subscription.id);
      expect(refused.status).toBe(404);
      expect(refused.headers.get("subscription-state")).toBeNull();
    }
    // The operator's view: bizcard deliveries log, the same log and reason.
    const cli = await bizcard([
      "deliveries",
      "log",
      "--org",
      orgId,
      "--client",
      app.id,
      "--subscription",
      String(subscription.id),
      "--json",
    ]);
    expect(cli.code).toBe(0);
    const printed = JSON.parse(cli.stdout) as {
      state: string;
      reason: string;
      attempts: { outcome: string; status_code: number }[];
    };
    expect(printed.state).toBe("deleted");
    expect(printed.reason).toBe(res.headers.get("subscription-state-reason"));
    expect(printed.attempts).toMatchObject([{ outcome: "gone", status_code: 410 }]);
    const text = await bizcard([
      "deliveries",
      "log",
      "--org",
      orgId,
      "--client",
      app.id,
      "--subscription",
      String(subscription.id),
    ]);
    expect(text.stdout).toMatch(
      new RegExp(`^subscription ${subscription.id} \\(deleted\\): deleted at \\S+: the target answered 410 Gone`),
    );
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

    // A retry has nothing to send to: still 404.
    expect(
      (
        await call(
          app,
          "POST",
          `${PATH}/${subscription.id}/deliveries/${(body[0] as unknown as { delivery_id: number }).delivery_id}/retry`,
        )
      ).status,
    ).toBe(404);
  });

  it("deleted by its owner: the log stays, with that reason; a subscription that never existed is 404", async () => {
    const ok = receiver.route("/history/deleted");
    const subscription = await subscribe(app, ok.url);
    await createContact(orgId, "Kept");
    await waitFor(async () => (await attempts(app, subscription.id)).length === 1 || undefined, 15_000, "the delivery");
    expect((await call(app, "DELETE", `${PATH}/${subscription.id}`)).status).toBe(204);

    const res = await log(app, subscription.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("subscription-state")).toBe("deleted");
    expect(res.headers.get("subscription-state-reason")).toMatch(/^deleted at \d{4}-\S+Z by its owner \(DELETE\)$/);
    expect(((await res.json()) as { outcome: string }[]).map((a) => a.outcome)).toEqual(["succeeded"]);
    expect((await log(app, 987654)).status).toBe(404);
  });

  it("an active subscription says so; a disabled one shows why", async () => {
    const fine = receiver.route("/history/fine");
    const active = await subscribe(app, fine.url);
    const res = await log(app, active.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("subscription-state")).toBe("active");
    expect(res.headers.get("subscription-state-reason")).toBeNull();

    const failing = receiver.route("/history/failing", () => ({ status: 503 }));
    const subscription = await subscribe(foreign, failing.url);
    await createContact(otherOrgId, "Failing");
    const disabled = await waitFor(
      async () => {
        const body = (await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody;
        return body.disabled_at ? body : undefined;
      },
      20_000,
      "the subscription disabled",
    );
    const answer = await log(foreign, subscription.id);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("subscription-state")).toBe("disabled");
    expect(answer.headers.get("subscription-state-reason")).toBe(
      `disabled at ${disabled.disabled_at}: ${disabled.disabled_reason}`,
    );
  });
});
