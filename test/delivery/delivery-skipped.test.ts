// Events that happen while a subscription is disabled are not dropped: each
// is recorded as a skipped delivery (nothing is sent), shown in its delivery
// log with outcome "skipped", and can be sent once the subscription is
// enabled again.
import { describe, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  orgId,
  PATH,
  platform,
  receiver,
  RFC3339,
  sibling,
  subscribe,
  type SubscriptionBody,
  useDeliveryApiSuite,
  UUID,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite();

const SKIPPED = "skipped: the subscription was disabled";

describe("a disabled subscription's events", () => {
  it("are recorded as skipped: in the log, nothing sent; once enabled, a retry sends one", async () => {
    let healthy = false;
    const failing = receiver.route("/skipped/failing", () => ({ status: healthy ? 200 : 503 }));
    const control = receiver.route("/skipped/control");
    const subscription = await subscribe(app, failing.url);
    await subscribe(sibling, control.url);
    await createContact(orgId, "Before");
    await waitFor(
      async () =>
        ((await (await call(app, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody).disabled_at ||
        undefined,
      20_000,
      "disabled",
    );
    const failures = (await attempts(app, subscription.id)).length;
    const sent = failing.requests.length;

    // Two events while it is disabled: the other application's subscription gets them, this one records them as skipped.
    const occurred = Date.now();
    await createContact(orgId, "Missed one");
    await createContact(orgId, "Missed two");
    await waitFor(() => control.requests.length === 3 || undefined, 15_000, "both events at the control");
    const log = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length === failures + 2 ? list : undefined;
      },
      15_000,
      "two skipped lines in the log",
    );
    const skipped = log.slice(0, 2);
    expect(skipped.map((a) => a.event_id)).toEqual([
      control.requests[2]!.headers["webhook-id"],
      control.requests[1]!.headers["webhook-id"],
    ]);
    for (const a of skipped) {
      expect(a).toMatchObject({
        attempt: 0,
        status_code: null,
        outcome: "skipped",
        error: SKIPPED,
        duration_ms: 0,
        next_retry_at: null,
        event_type: "contact.created",
      });
      expect(a.id).toMatch(UUID);
      expect(a.attempted_at).toMatch(RFC3339);
      expect(Date.parse(a.attempted_at)).toBeGreaterThanOrEqual(occurred - 250);
    }
    expect(skipped[0]!.delivery_id).not.toBe(skipped[1]!.delivery_id);
    expect(log.slice(2).every((a) => a.outcome === "failed")).toBe(true);
    expect(failing.requests.length, "nothing sent while disabled").toBe(sent);

    // The deliveries themselves: status "skipped", never due.
    const deliveries = (
      await platform.delivery
        .client(DeliveryService)
        .listDeliveries({ owner: { organisationId: orgId, clientId: app.id }, subscriptionId: BigInt(subscription.id) })
    ).deliveries;
    const rows = deliveries.filter((d) => skipped.some((a) => BigInt(a.delivery_id) === d.id));
    expect(rows.map((d) => [d.status, d.attempts, d.error, d.nextAttemptTime])).toEqual([
      ["skipped", 0, SKIPPED, undefined],
      ["skipped", 0, SKIPPED, undefined],
    ]);

    // While disabled a retry is refused, with the way out.
    const deliveryId = skipped[1]!.delivery_id;
    await expectError(
      await call(app, "POST", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`),
      409,
      "conflict",
      /disabled.*PUT/,
    );

    // Enabled again: nothing is sent by itself (recovery is asked for), a retry sends the missed event once.
    healthy = true;
    expect((await call(app, "PUT", `${PATH}/${subscription.id}`, {})).status).toBe(200);
    const res = await call(app, "POST", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`);
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).toBe(202);
    expect(body).toMatchObject({
      id: deliveryId,
      status: "pending",
      attempts: 0,
      status_code: null,
      error: SKIPPED,
      event_id: skipped[1]!.event_id,
    });
    const arrived = await waitFor(() => failing.requests[sent], 15_000, "the missed event, sent");
    expect(arrived.headers["webhook-id"]).toBe(skipped[1]!.event_id);
    expect(JSON.parse(arrived.body).data.first_name).toBe("Missed one");
    const after = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length === failures + 3 ? list : undefined;
      },
      15_000,
      "its attempt in the log",
    );
    expect(after[0]).toMatchObject({ delivery_id: deliveryId, attempt: 1, outcome: "succeeded", status_code: 200 });
    expect(after.slice(1)).toEqual(log);
    expect(failing.requests.length).toBe(sent + 1);
  });

  it("an active subscription's events are sent as before: no skipped line", async () => {
    const ok = receiver.route("/skipped/active");
    const subscription = await subscribe(app, ok.url);
    await createContact(orgId, "Active");
    const log = await waitFor(
      async () => {
        const list = await attempts(app, subscription.id);
        return list.length >= 1 ? list : undefined;
      },
      15_000,
      "the delivery",
    );
    expect(log.map((a) => [a.attempt, a.outcome])).toEqual([[1, "succeeded"]]);
  });
});
