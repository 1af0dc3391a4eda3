// A subscription that fails every attempt for the period is disabled, as a
// client application sees it over REST, and comes back when it is enabled.
import { describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  call,
  createContact,
  foreign,
  otherOrgId,
  PATH,
  receiver,
  RFC3339,
  subscribe,
  type SubscriptionBody,
  useDeliveryApiSuite,
  webhook,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite();

describe("a subscription that fails every attempt for the period is disabled", () => {
  it("shows disabled_at and disabled_reason, gets nothing more, and a PUT enables it again", async () => {
    let healthy = false;
    const failing = receiver.route("/disable/failing", () => ({ status: healthy ? 200 : 503 }));
    const control = receiver.route("/disable/control");
    const subscription = await subscribe(foreign, failing.url);
    await subscribe(foreign, control.url);
    const startedAt = Date.now();
    await createContact(otherOrgId, "First");

    const disabled = await waitFor(
      async () => {
        const res = await call(foreign, "GET", `${PATH}/${subscription.id}`);
        const body = (await res.json()) as SubscriptionBody;
        return body.disabled_at ? body : undefined;
      },
      20_000,
      "the subscription disabled",
    );
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2000);
    expect(disabled.disabled_at).toMatch(RFC3339);
    expect(disabled.updated_at).toBe(subscription.updated_at);
    expect(disabled.disabled_reason).toMatch(
      /^every delivery attempt since \S+ failed \(\d+ attempts; the last: HTTP 503\); update the subscription \(PUT\) to enable it again$/,
    );
    // The list shows it too.
    const listed = (await (await call(foreign, "GET", PATH)).json()) as SubscriptionBody[];
    expect(listed.find((s) => s.id === subscription.id)).toEqual(disabled);
    const log = await attempts(foreign, subscription.id);
    expect(log.length).toBeGreaterThanOrEqual(4);
    expect(log.every((a) => a.outcome === "failed" && a.status_code === 503)).toBe(true);
    const firstEvent = control.requests[0]!.headers["webhook-id"];
    expect(failing.requests.every((r) => r.headers["webhook-id"] === firstEvent)).toBe(true);

    // Nothing more: neither the first event's retries nor a new event reach it, while the control gets the new one.
    const sent = failing.requests.length;
    await createContact(otherOrgId, "Second");
    await waitFor(() => control.requests.length === 2 || undefined, 15_000, "the second event at the control");
    expect(failing.requests.length).toBe(sent);
    // Retrying while disabled: 409, with the way out.
    const retry = await call(foreign, "POST", `${PATH}/${subscription.id}/deliveries/${log[0]!.delivery_id}/retry`);
    await expectError(retry, 409, "conflict", /disabled.*PUT/);

    // A PUT, even one that changes no field, enables it again.
    healthy = true;
    const put = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    const enabled = (await put.json()) as SubscriptionBody;
    expect(put.status, JSON.stringify(enabled)).toBe(200);
    expect(enabled).toMatchObject({
      id: subscription.id,
      target_url: failing.url,
      disabled_at: null,
      disabled_reason: null,
    });
    expect(Date.parse(enabled.updated_at)).toBeGreaterThan(Date.parse(subscription.updated_at));
    // A second PUT changing nothing leaves it as it is.
    const again = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    expect(await again.json()).toEqual(enabled);

    await createContact(otherOrgId, "Third");
    const third = await waitFor(() => control.requests[2], 15_000, "the third event at the control");
    const arrived = await waitFor(
      () => failing.requests.find((r) => r.headers["webhook-id"] === third.headers["webhook-id"]),
      15_000,
      "the third event at the re-enabled subscription",
    );
    expect(JSON.parse(arrived.body).data.first_name).toBe("Third");
    expect(failing.requests.length).toBe(sent + 1);
  });

  it("re-enabled while its receiver still fails: the streak starts again at the PUT, not at the old failures", async () => {
    const failing = receiver.route("/disable/still-failing", () => ({ status: 500 }));
    const subscription = await subscribe(foreign, failing.url);
    await createContact(otherOrgId, "Fourth");
    await waitFor(
      async () =>
        ((await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody).disabled_at ||
        undefined,
      20_000,
      "disabled",
    );
    const put = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    const enabled = (await put.json()) as SubscriptionBody;
    expect(enabled.disabled_at).toBeNull();
    const sent = failing.requests.length;
    await createContact(otherOrgId, "Fifth");
    // Its first failures after the PUT (the old streak is long enough, but it ended at the PUT) leave it enabled ...
    await waitFor(
      async () => {
        const log = await attempts(foreign, subscription.id);
        return log.filter((a) => Date.parse(a.attempted_at) > Date.parse(enabled.updated_at)).length >= 2 || undefined;
      },
      15_000,
      "two failures after the PUT",
    );
    expect(failing.requests.length).toBeGreaterThan(sent);
    const meanwhile = (await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody;
    expect(meanwhile.disabled_at).toBeNull();
    // ... until they too have lasted the period.
    const again = await waitFor(
      async () => {
        const body = (await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody;
        return body.disabled_at ? body : undefined;
      },
      20_000,
      "disabled again",
    );
    expect(Date.parse(again.disabled_at!) - Date.parse(enabled.updated_at)).toBeGreaterThanOrEqual(2000);
  });

  it("DisableSubscription (the delivery service's RPC): only the owner's, not one changed since the streak began, once", async () => {
    const hooks = webhook.client(WebhookService);
    const owner = { organisationId: otherOrgId, clientId: foreign.id };
    const target = receiver.route("/disable/rpc");
    const { subscription } = await hooks.createSubscription({
      owner,
      targetUrl: target.url,
      eventType: EventType.CONTACT_UPDATED,
    });
    const before = new Date(Date.now() - 60_000);
    const after = new Date(Date.now() + 1000);
    const request = (o: typeof owner, failingSince: Date) => ({
      owner: o,
      id: subscription!.id,
      failingSince: timestampFromDate(failingSince),
      reason: "every attempt failed",
    });
    const code = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (err: unknown) => ConnectError.from(err).code,
      );

    expect(await code(hooks.disableSubscription(request({ ...owner, clientId: app.id }, after)))).toBe(Code.NotFound);
    expect(await code(hooks.disableSubscription({ ...request(owner, after), reason: " " }))).toBe(Code.InvalidArgument);
    expect(await code(hooks.disableSubscription({ ...request(owner, after), failingSince: undefined }))).toBe(
      Code.InvalidArgument,
    );
    // Created after the streak began: the streak does not count.
    const early = await hooks.disableSubscription(request(owner, before));
    expect(early.disabled).toBe(false);
    expect(early.subscription!.disableTime).toBeUndefined();
    const ok = await hooks.disableSubscription(request(owner, after));
    expect(ok.disabled).toBe(true);
    expect(ok.subscription!.disabledReason).toBe("every attempt failed");
    expect(ok.subscription!.disableTime).toBeDefined();
    expect(ok.subscription!.updateTime).toEqual(subscription!.updateTime);
    const twice = await hooks.disableSubscription({ ...request(owner, after), reason: "another reason" });
    expect(twice.disabled).toBe(false);
    expect(twice.subscription).toEqual(ok.subscription);
    // Disabled: not a subscriber.
    const subscribers = (
      await hooks.listSubscribers({ organisationId: otherOrgId, eventType: EventType.CONTACT_UPDATED })
    ).subscribers;
    expect(subscribers.map((s) => s.subscriptionId)).not.toContain(subscription!.id);
    await hooks.updateSubscription({ owner, id: subscription!.id });
    const back = (await hooks.listSubscribers({ organisationId: otherOrgId, eventType: EventType.CONTACT_UPDATED }))
      .subscribers;
    expect(back.map((s) => s.subscriptionId)).toContain(subscription!.id);
  });
});
