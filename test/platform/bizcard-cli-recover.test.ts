// `bizcard deliveries recover` end to end: the real command (bin/bizcard.js)
// against the suite's delivery and webhook services, after its receiver gave
// up on events: it prints how many were queued, --json prints what
// POST …/{id}/recover answers (the gateway's own schema, no key more or less),
// and the events arrive once more. Its refusals: a usage error (exit 2)
// before any call, another pair's subscription and a disabled one (exit 1).
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { Recovered } from "../../gateway/schemas/subscription-recover.js";
import type { Answer } from "../support/receiver.js";
import { runBizcard, waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  orgId,
  PATH,
  platform,
  receiver,
  sibling,
  subscribe,
  TOKEN,
  useDeliveryApiSuite,
  webhook,
} from "../support/delivery-api-suite.js";

// One retry, then the delivery gives up; the failures do not disable the subscription.
useDeliveryApiSuite({
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2",
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "3600",
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "1",
});

const RecoveredOut = Recovered.strict();

function bizcard(args: string[]) {
  return runBizcard(args, {
    WEBHOOK_RPC_URL: platform.webhook.server.url,
    DELIVERY_RPC_URL: platform.delivery.server.url,
    INTERNAL_RPC_TOKEN: TOKEN,
    DATA_DIR: undefined,
  });
}

const firstName = (body: string) => (JSON.parse(body) as { data: { first_name: string } }).data.first_name;

describe("bizcard deliveries recover", { timeout: 180_000 }, () => {
  it("queues what gave up since --since: the count, --json as REST answers it, each event once more in order", async () => {
    let up = false;
    const target = receiver.route("/cli-recover/outage", (): Answer => ({ status: up ? 200 : 500 }));
    const subscription = await subscribe(app, target.url);
    const owner = ["--org", orgId, "--client", app.id];
    const since = new Date(Date.now() - 1000).toISOString();
    for (const name of ["Lost 1", "Lost 2"]) await createContact(orgId, name);
    await waitFor(
      async () =>
        (await attempts(app, subscription.id)).filter((a) => a.outcome === "gave_up").length === 2 || undefined,
      30_000,
      "both given up",
    );
    up = true;
    const sent = target.requests.length;

    const text = await bizcard(["deliveries", "recover", String(subscription.id), ...owner, "--since", since]);
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toBe(`subscription ${subscription.id}: 2 deliveries since ${since} queued, oldest first\n`);
    const again = await waitFor(
      () => (target.requests.length >= sent + 2 ? target.requests.slice(sent) : undefined),
      15_000,
      "both again",
    );
    expect(again.map((r) => firstName(r.body))).toEqual(["Lost 1", "Lost 2"]);
    await waitFor(
      async () =>
        (await attempts(app, subscription.id)).filter((a) => a.outcome === "succeeded").length === 2 || undefined,
      15_000,
      "recorded",
    );

    // --json: the REST answer's names and types; nothing left to recover now, over the CLI as over REST.
    const json = await bizcard([
      "deliveries",
      "recover",
      String(subscription.id),
      ...owner,
      "--since",
      since,
      "--json",
    ]);
    expect(json.code, json.stdout + json.stderr).toBe(0);
    const lines = json.stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    const parsed = RecoveredOut.safeParse(JSON.parse(lines[0]!));
    expect(parsed.error?.issues ?? [], lines[0]).toEqual([]);
    const rest = await call(app, "POST", `${PATH}/${subscription.id}/recover`, { since });
    expect(rest.status).toBe(202);
    expect(parsed.data).toEqual(await rest.json());
    expect(parsed.data).toEqual({ subscription_id: subscription.id, since, queued: 0 });
    expect(target.requests.length).toBe(sent + 2);
  });

  it("refuses: a bad --since or id before any call (exit 2), another pair's subscription and a disabled one (exit 1)", async () => {
    const subscription = await subscribe(app, receiver.route("/cli-recover/refused").url);
    const id = String(subscription.id);
    const owner = ["--org", orgId, "--client", app.id];
    const now = new Date().toISOString();

    const bad = await bizcard(["deliveries", "recover", id, ...owner, "--since", "yesterday", "--json"]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout)).toEqual({
      error: "invalid_usage",
      error_description: '--since: expected an RFC 3339 date-time, such as 2026-01-15T09:00:00Z, not "yesterday"',
    });
    const noId = await bizcard(["deliveries", "recover", ...owner, "--since", now]);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toMatch(
      /^bizcard: missing SUBSCRIPTION_ID\nusage:\n {2}bizcard deliveries recover SUBSCRIPTION_ID --org ID --client CLIENT_ID --since TIME \[--json\]/,
    );
    const noSince = await bizcard(["deliveries", "recover", id, ...owner, "--json"]);
    expect(JSON.parse(noSince.stdout)).toEqual({ error: "invalid_usage", error_description: "missing --since" });
    const badId = await bizcard(["deliveries", "recover", "x1", ...owner, "--since", now, "--json"]);
    expect(JSON.parse(badId.stdout).error_description).toBe(
      'SUBSCRIPTION_ID: expected a subscription id (a positive whole number), not "x1"',
    );
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const later = await bizcard(["deliveries", "recover", id, ...owner, "--since", future, "--json"]);
    expect(later.code).toBe(1);
    expect(JSON.parse(later.stdout)).toEqual({
      error: "invalid_argument",
      error_description: `since: ${future} is in the future; recovery queues deliveries created at or after it`,
    });

    const other = await bizcard(["deliveries", "recover", id, "--org", orgId, "--client", sibling.id, "--since", now]);
    expect(other.code).toBe(1);
    expect(other.stderr).toBe("bizcard: subscription not found (not_found)\n");

    await webhook.client(WebhookService).disableSubscription({
      owner: { organisationId: orgId, clientId: app.id },
      id: BigInt(subscription.id),
      failingSince: timestampFromDate(new Date(Date.now() + 1000)),
      reason: "every delivery attempt failed",
    });
    const disabled = await bizcard(["deliveries", "recover", id, ...owner, "--since", now, "--json"]);
    expect(disabled.code).toBe(1);
    expect(JSON.parse(disabled.stdout)).toEqual({
      error: "failed_precondition",
      error_description: `subscription ${id} is disabled: it would be sent nothing; re-enable it first (PUT), then recover`,
    });
  });
});
