// The delivery log as a client application sees it: its subscriptions'
// deliveries and attempts over REST, paged and filtered, and a retry. The
// disabling of a subscription that only fails: delivery-api-disable.test.ts.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import type { Receiver } from "../support/receiver.js";
import {
  app,
  ATTEMPT_KEYS,
  type AttemptBody,
  attempts,
  base,
  call,
  contactsOnly,
  createContact,
  DELIVERY_KEYS,
  foreign,
  orgId,
  PATH,
  reader,
  receiver,
  RFC3339,
  sibling,
  subscribe,
  type SubscriptionBody,
  useDeliveryApiSuite,
  UUID,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite();

describe("the delivery log", () => {
  let subscription: SubscriptionBody;
  let route: ReturnType<Receiver["route"]>;
  let log: AttemptBody[];

  beforeAll(async () => {
    // 500 first, then 200.
    route = receiver.route("/log/flaky", (n) => (n === 1 ? { status: 500 } : { status: 200 }));
    subscription = await subscribe(app, route.url);
    await createContact(orgId, "Ada");
    log = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length === 2 ? list : undefined;
      },
      20_000,
      "two attempts in the log",
    );
  });

  it("lists the attempts newest first: event id, type, status code, duration, error, next retry", async () => {
    expect(route.requests.length).toBe(2);
    const eventId = route.requests[0]!.headers["webhook-id"];
    const [ok, failed] = log;
    for (const a of log) {
      expect(Object.keys(a).sort()).toEqual(ATTEMPT_KEYS);
      expect(a.id).toMatch(UUID);
      expect(a.event_id).toBe(eventId);
      expect(a.event_type).toBe("contact.created");
      expect(a.attempted_at).toMatch(RFC3339);
      expect(Number.isInteger(a.duration_ms) && a.duration_ms >= 0).toBe(true);
    }
    expect(ok!.delivery_id).toBe(failed!.delivery_id);
    expect(failed).toMatchObject({ attempt: 1, status_code: 500, outcome: "failed", error: "HTTP 500" });
    expect(failed!.next_retry_at).toMatch(RFC3339);
    expect(Date.parse(failed!.next_retry_at!)).toBeGreaterThan(Date.parse(failed!.attempted_at));
    expect(ok).toMatchObject({ attempt: 2, status_code: 200, outcome: "succeeded", error: null, next_retry_at: null });
    expect(Date.parse(ok!.attempted_at)).toBeGreaterThanOrEqual(Date.parse(failed!.next_retry_at!) - 1);
  });

  it("pages with ?limit= and a Link header, like the subscriptions list", async () => {
    const res = await call(app, "GET", `${PATH}/${subscription.id}/deliveries?limit=1`);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual([log[0]]);
    const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link") ?? "");
    expect(link?.[1]).toMatch(new RegExp(`^${base}${PATH}/${subscription.id}/deliveries\\?limit=1&cursor=`));
    const next = await call(app, "GET", link![1]!);
    expect(await next.json()).toEqual([log[1]]);
    expect(next.headers.get("link")).toBeNull();
    await expectError(
      await call(app, "GET", `${PATH}/${subscription.id}/deliveries?limit=0`),
      400,
      "invalid_request",
      /^limit: /,
    );
    await expectError(
      await call(app, "GET", `${PATH}/${subscription.id}/deliveries?cursor=nonsense`),
      400,
      "invalid_request",
      /^cursor: /,
    );
  });

  it("retry sends the delivery again now: 202 with the delivery, the same webhook-id, a third attempt in the log", async () => {
    const deliveryId = log[0]!.delivery_id;
    const res = await call(app, "POST", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`);
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).toBe(202);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(Object.keys(body).sort()).toEqual(DELIVERY_KEYS);
    expect(body).toMatchObject({
      id: deliveryId,
      event_id: log[0]!.event_id,
      event_type: "contact.created",
      subscription_id: subscription.id,
      status_code: 200,
      error: null,
    });
    // As the delivery was right after the retry was taken: due now ("pending"), unless a worker was already quicker.
    if (body.status === "pending") expect(body.next_retry_at).toMatch(RFC3339);
    else expect(body).toMatchObject({ status: "succeeded", attempts: 3, next_retry_at: null });
    expect([2, 3]).toContain(body.attempts);
    await waitFor(() => route.requests.length === 3 || undefined, 15_000, "the retried POST");
    expect(route.requests[2]!.headers["webhook-id"]).toBe(log[0]!.event_id);
    const after = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length === 3 ? list : undefined;
      },
      15_000,
      "the third attempt in the log",
    );
    expect(after[0]).toMatchObject({ attempt: 3, status_code: 200, outcome: "succeeded", delivery_id: deliveryId });
    expect(after.slice(1)).toEqual(log);
  });

  it("another application's or organisation's subscription or delivery is 404; ids that are not positive integers are 400", async () => {
    const deliveryId = log[0]!.delivery_id;
    for (const other of [sibling, foreign]) {
      await expectError(await call(other, "GET", `${PATH}/${subscription.id}/deliveries`), 404, "not_found");
      await expectError(
        await call(other, "POST", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`),
        404,
        "not_found",
      );
    }
    // The sibling's own subscription with this application's delivery: not one of its deliveries.
    const theirs = await subscribe(sibling, receiver.route("/log/sibling").url);
    await expectError(
      await call(sibling, "POST", `${PATH}/${theirs.id}/deliveries/${deliveryId}/retry`),
      404,
      "not_found",
    );
    expect(await attempts(sibling, theirs.id)).toEqual([]);
    // This application's own subscription, but a delivery id that does not exist.
    await expectError(
      await call(app, "POST", `${PATH}/${subscription.id}/deliveries/999999999/retry`),
      404,
      "not_found",
    );
    await expectError(await call(app, "GET", `${PATH}/999999999/deliveries`), 404, "not_found");

    await expectError(
      await call(app, "GET", `${PATH}/abc/deliveries`),
      400,
      "invalid_request",
      'id: expected a positive integer, not "abc"',
    );
    await expectError(await call(app, "GET", `${PATH}/0/deliveries`), 400, "invalid_request", /^id: /);
    await expectError(
      await call(app, "POST", `${PATH}/-1/deliveries/${deliveryId}/retry`),
      400,
      "invalid_request",
      /^id: /,
    );
    await expectError(
      await call(app, "POST", `${PATH}/${subscription.id}/deliveries/abc/retry`),
      400,
      "invalid_request",
      'delivery_id: expected a positive integer, not "abc"',
    );
    await expectError(
      await call(app, "POST", `${PATH}/${subscription.id}/deliveries/99999999999999999999/retry`),
      400,
      "invalid_request",
      /^delivery_id: /,
    );
    await expectError(
      await call(app, "GET", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`),
      405,
      "method_not_allowed",
    );
  });

  it("401 without a token; 403 insufficient_scope: webhooks:read to list, webhooks:write to retry", async () => {
    const list = `${PATH}/${subscription.id}/deliveries`;
    const retry = `${list}/${log[0]!.delivery_id}/retry`;
    for (const [method, path] of [
      ["GET", list],
      ["POST", retry],
    ] as const) {
      const none = await call(undefined, method, path);
      expect(none.headers.get("www-authenticate")).toMatch(
        /^Bearer realm="bizcard", resource_metadata="http:\/\/[^"]+\/\.well-known\/oauth-protected-resource"$/,
      );
      await expectError(none, 401, "invalid_token");
    }
    for (const [client, method, path, scope] of [
      [contactsOnly, "GET", list, "webhooks:read"],
      [reader, "POST", retry, "webhooks:write"],
    ] as const) {
      const res = await call(client, method, path);
      expect(res.headers.get("www-authenticate")).toMatch(
        new RegExp(
          `^Bearer realm="bizcard", resource_metadata="[^"]+", error="insufficient_scope", error_description="this resource needs the scope ${scope}", scope="${scope}"$`,
        ),
      );
      await expectError(res, 403, "insufficient_scope");
    }
    // webhooks:read is enough to read the log (of its own subscriptions: none here).
    const own = await call(reader, "GET", list);
    await expectError(own, 404, "not_found");
  });
});

// Of the disabling rules, the one about the subscription above: it failed once, then succeeded.
describe("a subscription that fails every attempt for the period is disabled", () => {
  it("a subscription that fails but not yet for the period stays enabled", async () => {
    // The first test's subscription failed once then succeeded: still enabled.
    const res = await call(app, "GET", PATH);
    const all = (await res.json()) as SubscriptionBody[];
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((s) => s.disabled_at === null && s.disabled_reason === null)).toBe(true);
  });
});
