// Recovery, as a team whose receiver was down would use it: one
// POST …/{id}/recover with the time the outage began queues one new attempt
// for every delivery since then that gave up, was cancelled or skipped (a
// failed one still waiting for its retry is sent now), oldest first, and
// answers how many. What had succeeded is not sent again; a disabled
// subscription must be re-enabled first.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Answer } from "../support/receiver.js";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
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
  reader,
  receiver,
  sibling,
  subscribe,
  type SubscriptionBody,
  useDeliveryApiSuite,
  webhook,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite({
  // Three attempts over about half a second, then the delivery gives up.
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.3",
  // The outage does not disable the subscription here (the disabled case disables it itself).
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "3600",
  // One POST at a time per subscription: the receiver sees the claim's order.
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: "1",
});

const firstName = (body: string) => (JSON.parse(body) as { data: { first_name: string } }).data.first_name;

async function recover(
  client: typeof app,
  id: number,
  since: string,
): Promise<{ subscription_id: number; since: string; queued: number }> {
  const res = await call(client, "POST", `${PATH}/${id}/recover`, { since });
  const body = (await res.json()) as { subscription_id: number; since: string; queued: number };
  expect(res.status, JSON.stringify(body)).toBe(202);
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(Object.keys(body).sort()).toEqual(["queued", "since", "subscription_id"]);
  return body;
}

describe("POST /oauth/webhooks/subscriptions/{id}/recover", { timeout: 120_000 }, () => {
  it("after an outage: every failed event arrives once more, in event order; what succeeded is not sent again", async () => {
    let mode: "up" | "down" | "down, retry in an hour" = "up";
    const target = receiver.route(
      "/recover/outage",
      (): Answer =>
        mode === "up"
          ? { status: 200 }
          : mode === "down"
            ? { status: 500 }
            : { status: 500, headers: { "retry-after": "3600" } },
    );
    const subscription = await subscribe(app, target.url);
    const since = new Date(Date.now() - 1000).toISOString();
    await createContact(orgId, "Before");
    await waitFor(() => target.requests[0], 15_000, "the first event");

    // The receiver is down: three events are tried three times each and given up ...
    mode = "down";
    for (const name of ["Down 1", "Down 2", "Down 3"]) await createContact(orgId, name);
    await waitFor(
      async () =>
        (await attempts(app, subscription.id)).filter((a) => a.outcome === "gave_up").length === 3 || undefined,
      30_000,
      "three given up",
    );
    // ... and a fourth failed once and waits an hour for its retry (the receiver's Retry-After).
    mode = "down, retry in an hour";
    await createContact(orgId, "Down 4");
    const log = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list[0]?.outcome === "failed" && firstName(target.requests.at(-1)!.body) === "Down 4" ? list : undefined;
      },
      15_000,
      "the fourth's first failure",
    );
    expect(Date.parse(log[0]!.next_retry_at!)).toBeGreaterThan(Date.now() + 3_000_000);
    // Each given-up event was tried three times, the waiting one once.
    expect(target.requests.map((r) => firstName(r.body)).sort()).toEqual([
      "Before",
      ...["Down 1", "Down 2", "Down 3"].flatMap((n) => [n, n, n]),
      "Down 4",
    ]);
    const eventIds = new Map(target.requests.map((r) => [firstName(r.body), r.headers["webhook-id"]]));

    // Up again: one call.
    mode = "up";
    const sent = target.requests.length;
    const answer = await recover(app, subscription.id, since);
    expect(answer).toEqual({ subscription_id: subscription.id, since, queued: 4 });
    const again = await waitFor(
      () => (target.requests.length >= sent + 4 ? target.requests.slice(sent) : undefined),
      15_000,
      "the four again",
    );
    expect(again.map((r) => firstName(r.body))).toEqual(["Down 1", "Down 2", "Down 3", "Down 4"]);
    expect(again.map((r) => r.headers["webhook-id"])).toEqual(
      ["Down 1", "Down 2", "Down 3", "Down 4"].map((n) => eventIds.get(n)),
    );

    // Each recorded as succeeded; nothing more came, and a second recovery finds nothing left to send.
    const after = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.filter((a) => a.outcome === "succeeded").length === 5 ? list : undefined;
      },
      15_000,
      "the attempts in the log",
    );
    expect(after.slice(0, 4).map((a) => [a.event_id, a.outcome, a.status_code])).toEqual(
      ["Down 4", "Down 3", "Down 2", "Down 1"].map((n) => [eventIds.get(n), "succeeded", 200]),
    );
    // A given-up delivery's recovery is its fourth attempt; the waiting one's, its second.
    expect(after.slice(0, 4).map((a) => a.attempt)).toEqual([2, 4, 4, 4]);
    expect(await recover(app, subscription.id, since)).toEqual({ subscription_id: subscription.id, since, queued: 0 });
    expect(target.requests.length).toBe(sent + 4);
  });

  it("a disabled subscription: its events are kept as skipped; recovery is 409 until a PUT, then sends each once", async () => {
    let down = false;
    // Down: the failed delivery's retry waits 5 s (Retry-After), long enough to disable the subscription meanwhile.
    const target = receiver.route(
      "/recover/disabled",
      (): Answer => (down ? { status: 500, headers: { "retry-after": "5" } } : { status: 200 }),
    );
    const subscription = await subscribe(foreign, target.url);
    const owner = { organisationId: otherOrgId, clientId: foreign.id };
    const since = new Date(Date.now() - 1000).toISOString();
    await createContact(otherOrgId, "Enabled");
    await waitFor(() => target.requests[0], 15_000, "the first event");
    down = true;
    await createContact(otherOrgId, "Failing");
    await waitFor(() => target.requests[1], 15_000, "the second event's first attempt");

    const disabled = await webhook.client(WebhookService).disableSubscription({
      owner,
      id: BigInt(subscription.id),
      failingSince: timestampFromDate(new Date(Date.now() + 1000)),
      reason: "every delivery attempt failed",
    });
    expect(disabled.disabled).toBe(true);
    await createContact(otherOrgId, "Missed 1");
    await createContact(otherOrgId, "Missed 2");
    await waitFor(
      async () =>
        (await attempts(foreign, subscription.id)).filter((a) => a.outcome === "skipped").length === 2 || undefined,
      15_000,
      "two skipped",
    );
    // The failed one's retry came while it was disabled: cancelled, not sent.
    const deliveries = platform.delivery.client(DeliveryService);
    const statuses = await waitFor(
      async () => {
        const list = (
          await deliveries.listDeliveries({ owner, subscriptionId: BigInt(subscription.id) })
        ).deliveries.map((d) => d.status);
        return list.includes("cancelled") ? list : undefined;
      },
      20_000,
      "the failed delivery cancelled",
    );
    expect(statuses).toEqual(["skipped", "skipped", "cancelled", "succeeded"]);
    // The log says so: the failed attempt's planned retry is followed by a cancelled line, not left standing.
    const log = await attempts(foreign, subscription.id);
    const failed = log.find((a) => a.outcome === "failed")!;
    expect(failed.next_retry_at).not.toBeNull();
    const cancelled = log.filter((a) => a.outcome === "cancelled");
    expect(cancelled).toEqual([
      expect.objectContaining({
        delivery_id: failed.delivery_id,
        attempt: 0,
        status_code: null,
        error: "cancelled: the subscription was disabled",
        next_retry_at: null,
      }),
    ]);
    expect(log.indexOf(cancelled[0]!), "newest first: after the failed attempt").toBeLessThan(log.indexOf(failed));

    await expectError(
      await call(foreign, "POST", `${PATH}/${subscription.id}/recover`, { since }),
      409,
      "conflict",
      /is disabled.*re-enable it first \(PUT\)/,
    );
    down = false;
    const put = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    expect(((await put.json()) as SubscriptionBody).disabled_at).toBeNull();
    expect(target.requests.length, "nothing sent while disabled, nor by the PUT itself").toBe(2);

    expect(await recover(foreign, subscription.id, since)).toEqual({
      subscription_id: subscription.id,
      since,
      queued: 3,
    });
    const again = await waitFor(
      () => (target.requests.length >= 5 ? target.requests.slice(2) : undefined),
      15_000,
      "the three events",
    );
    expect(again.map((r) => firstName(r.body))).toEqual(["Failing", "Missed 1", "Missed 2"]);
    await waitFor(
      async () =>
        (await attempts(foreign, subscription.id)).filter((a) => a.outcome === "succeeded").length === 4 || undefined,
      15_000,
      "recorded",
    );
    expect(await recover(foreign, subscription.id, since)).toEqual({
      subscription_id: subscription.id,
      since,
      queued: 0,
    });
    expect(target.requests.length).toBe(5);
  });

  it("refuses a bad or future since, an unknown field, another pair's subscription, another media type, a read-only token", async () => {
    const subscription = await subscribe(app, receiver.route("/recover/errors").url);
    const path = `${PATH}/${subscription.id}/recover`;
    const now = new Date().toISOString();
    await expectError(
      await call(app, "POST", path, {}),
      400,
      "invalid_request",
      "since: required (an RFC 3339 date-time, such as 2026-01-15T09:00:00Z)",
    );
    await expectError(await call(app, "POST", path), 400, "invalid_request", /^since: required/);
    for (const since of ["yesterday", "2026-11-24 01:00:00Z", "2026-02-30T01:00:00Z", 1700000000]) {
      await expectError(
        await call(app, "POST", path, { since }),
        400,
        "invalid_request",
        "since: expected an RFC 3339 date-time, such as 2026-01-15T09:00:00Z",
      );
    }
    await expectError(
      await call(app, "POST", path, { since: now, until: now }),
      400,
      "invalid_request",
      'unknown field "until"; the body has since only',
    );
    const future = new Date(Date.now() + 3_600_000).toISOString();
    await expectError(
      await call(app, "POST", path, { since: future }),
      400,
      "invalid_request",
      `since: ${future} is in the future; recovery queues deliveries created at or after it`,
    );
    await expectError(
      await call(app, "POST", `${PATH}/abc/recover`, { since: now }),
      400,
      "invalid_request",
      'id: expected a positive integer, not "abc"',
    );

    // Another application of the same organisation, another organisation's: 404, as on every subscription route.
    await expectError(await call(sibling, "POST", path, { since: now }), 404, "not_found", "subscription not found");
    await expectError(await call(foreign, "POST", path, { since: now }), 404, "not_found", "subscription not found");
    await expectError(
      await call(app, "POST", `${PATH}/999999999/recover`, { since: now }),
      404,
      "not_found",
      "subscription not found",
    );

    // JSON only, and the 415 says so whether the route refuses the type (a form) or no parser takes it (text/plain).
    await expectError(
      await call(app, "POST", path, `since=${now}`, { "content-type": "application/x-www-form-urlencoded" }),
      415,
      "unsupported_media_type",
      "send the body as application/json",
    );
    await expectError(
      await call(app, "POST", path, JSON.stringify({ since: now }), { "content-type": "text/plain" }),
      415,
      "unsupported_media_type",
      "send the body as application/json",
    );
    await expectError(await call(reader, "POST", path, { since: now }), 403, "insufficient_scope");
    await expectError(await call(undefined, "POST", path, { since: now }), 401, "invalid_token");

    // A good since with an offset is read as the same instant.
    const offset = "2026-01-15T10:00:00+01:00";
    expect(await recover(app, subscription.id, offset)).toEqual({
      subscription_id: subscription.id,
      since: "2026-01-15T09:00:00.000Z",
      queued: 0,
    });
    // RFC 3339 §5.6 allows a lower-case "t" and "z".
    expect(await recover(app, subscription.id, "2026-01-15t09:00:00z")).toEqual({
      subscription_id: subscription.id,
      since: "2026-01-15T09:00:00.000Z",
      queued: 0,
    });
  });
});
