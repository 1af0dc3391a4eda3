// The delivery log and the disabling of a subscription that only fails, as a
// client application sees them: real HTTP to the gateway with real
// client_credentials tokens, in front of the real auth, organisation, webhook
// and delivery services on PostgreSQL and NATS, delivering to a local
// receiver (support/receiver.ts). The retry schedule and the disabling period
// are shortened to fit a test.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { EventType } from "../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { apiCaller, expectError, type AppClient } from "./support/api-client.js";
import { startPlatform, type Platform, type StartedService } from "./support/platform.js";
import { waitFor } from "./support/processes.js";
import { startReceiver, type Receiver } from "./support/receiver.js";

const TOKEN = "w".repeat(40);
const PATH = "/oauth/webhooks/subscriptions";
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ATTEMPT_KEYS = [
  "attempt",
  "attempted_at",
  "delivery_id",
  "duration_ms",
  "error",
  "event_id",
  "event_type",
  "id",
  "next_retry_at",
  "outcome",
  "status_code",
];
const DELIVERY_KEYS = ["attempts", "created_at", "error", "event_id", "event_type", "id", "next_retry_at", "status", "status_code", "subscription_id", "updated_at"];

const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  // Nine attempts over about five seconds; a subscription failing all of them for 2 s (and 4 attempts) is disabled.
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.3,0.4,0.5,0.6,0.8,1,1",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: "10",
  DELIVERY_POLL_MS: "50",
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "2",
  WEBHOOK_DISABLE_AFTER_FAILURES: "4",
};

let platform: Platform;
let receiver: Receiver;
let organisation: StartedService<ServiceApp>;
let auth: StartedService<ServiceApp>;
let webhook: StartedService<ServiceApp>;
let base: string;
let orgs: ReturnType<typeof organisation.client<typeof OrganisationService>>;
let orgId: string;
let otherOrgId: string;

type Client = AppClient;
/** Owned by orgId, every scope. */
let app: Client;
/** Another application of the same organisation. */
let sibling: Client;
/** An application of the other organisation (the disabling tests run there). */
let foreign: Client;
/** webhooks:read only. */
let reader: Client;
/** contacts:read only. */
let contactsOnly: Client;
const { tokenOf, call } = apiCaller(() => base);

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: TOKEN,
    config: shared,
    auth: true,
    webhook: true,
    delivery: true,
    gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
  });
  ({ organisation, auth, webhook, base } = platform);

  orgs = organisation.client(OrganisationService);
  orgId = (await orgs.createOrganisation({ name: "Logged Cards", ownerEmail: "owner@logged.test", ownerPassword: "password-l" })).organisation!.id;
  otherOrgId = (await orgs.createOrganisation({ name: "Flaky Cards", ownerEmail: "owner@flaky.test", ownerPassword: "password-f" })).organisation!.id;
  const clients = auth.client(AuthService);
  const make = async (name: string, owner: string, scopes: string[] = []): Promise<Client> => {
    const res = await clients.createClient({ name, ownerOrganisationId: owner, scopes });
    return { id: res.client!.clientId, secret: res.clientSecret };
  };
  app = await make("Zap", orgId);
  sibling = await make("Make", orgId);
  foreign = await make("Zap elsewhere", otherOrgId);
  reader = await make("Reader", orgId, ["webhooks:read"]);
  contactsOnly = await make("Poller", orgId, ["contacts:read"]);
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});




interface SubscriptionBody {
  id: number;
  target_url: string;
  updated_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
}

interface AttemptBody {
  id: string;
  delivery_id: number;
  event_id: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  outcome: string;
  error: string | null;
  duration_ms: number;
  attempted_at: string;
  next_retry_at: string | null;
}

async function subscribe(client: Client, target_url: string): Promise<SubscriptionBody> {
  const res = await call(client, "POST", PATH, { target_url, event_type: "contact.created" });
  const body = (await res.json()) as SubscriptionBody;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

async function attempts(client: Client, subscriptionId: number, query = ""): Promise<AttemptBody[]> {
  const res = await call(client, "GET", `${PATH}/${subscriptionId}/deliveries${query}`);
  const body = (await res.json()) as AttemptBody[];
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

const createContact = (organisationId: string, firstName: string) =>
  orgs.createContact({ organisationId, fields: { firstName, lastName: "Lovelace", email: "ada@example.test" } });

describe("the delivery log", () => {
  let subscription: SubscriptionBody;
  let route: ReturnType<Receiver["route"]>;
  let log: AttemptBody[];

  beforeAll(async () => {
    // 500 first, then 200.
    route = receiver.route("/log/flaky", (n) => (n === 1 ? { status: 500 } : { status: 200 }));
    subscription = await subscribe(app, route.url);
    await createContact(orgId, "Ada");
    log = await waitFor(async () => {
      const list = await attempts(app, subscription.id);
      return list.length === 2 ? list : undefined;
    }, 20_000, "two attempts in the log");
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
    await expectError(await call(app, "GET", `${PATH}/${subscription.id}/deliveries?limit=0`), 400, "invalid_request", /^limit: /);
    await expectError(await call(app, "GET", `${PATH}/${subscription.id}/deliveries?cursor=nonsense`), 400, "invalid_request", /^cursor: /);
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
    const after = await waitFor(async () => {
      const list = await attempts(app, subscription.id);
      return list.length === 3 ? list : undefined;
    }, 15_000, "the third attempt in the log");
    expect(after[0]).toMatchObject({ attempt: 3, status_code: 200, outcome: "succeeded", delivery_id: deliveryId });
    expect(after.slice(1)).toEqual(log);
  });

  it("another application's or organisation's subscription or delivery is 404; ids that are not positive integers are 400", async () => {
    const deliveryId = log[0]!.delivery_id;
    for (const other of [sibling, foreign]) {
      await expectError(await call(other, "GET", `${PATH}/${subscription.id}/deliveries`), 404, "not_found");
      await expectError(await call(other, "POST", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`), 404, "not_found");
    }
    // The sibling's own subscription with this application's delivery: not one of its deliveries.
    const theirs = await subscribe(sibling, receiver.route("/log/sibling").url);
    await expectError(await call(sibling, "POST", `${PATH}/${theirs.id}/deliveries/${deliveryId}/retry`), 404, "not_found");
    expect(await attempts(sibling, theirs.id)).toEqual([]);
    // This application's own subscription, but a delivery id that does not exist.
    await expectError(await call(app, "POST", `${PATH}/${subscription.id}/deliveries/999999999/retry`), 404, "not_found");
    await expectError(await call(app, "GET", `${PATH}/999999999/deliveries`), 404, "not_found");

    await expectError(await call(app, "GET", `${PATH}/abc/deliveries`), 400, "invalid_request", 'id: expected a positive integer, not "abc"');
    await expectError(await call(app, "GET", `${PATH}/0/deliveries`), 400, "invalid_request", /^id: /);
    await expectError(await call(app, "POST", `${PATH}/-1/deliveries/${deliveryId}/retry`), 400, "invalid_request", /^id: /);
    await expectError(
      await call(app, "POST", `${PATH}/${subscription.id}/deliveries/abc/retry`),
      400,
      "invalid_request",
      'delivery_id: expected a positive integer, not "abc"',
    );
    await expectError(await call(app, "POST", `${PATH}/${subscription.id}/deliveries/99999999999999999999/retry`), 400, "invalid_request", /^delivery_id: /);
    await expectError(await call(app, "GET", `${PATH}/${subscription.id}/deliveries/${deliveryId}/retry`), 405, "method_not_allowed");
  });

  it("401 without a token; 403 insufficient_scope: webhooks:read to list, webhooks:write to retry", async () => {
    const list = `${PATH}/${subscription.id}/deliveries`;
    const retry = `${list}/${log[0]!.delivery_id}/retry`;
    for (const [method, path] of [["GET", list], ["POST", retry]] as const) {
      const none = await call(undefined, method, path);
      expect(none.headers.get("www-authenticate")).toBe('Bearer realm="bizcard"');
      await expectError(none, 401, "invalid_token");
    }
    for (const [client, method, path, scope] of [
      [contactsOnly, "GET", list, "webhooks:read"],
      [reader, "POST", retry, "webhooks:write"],
    ] as const) {
      const res = await call(client, method, path);
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer realm="bizcard", error="insufficient_scope", error_description="this resource needs the scope ${scope}", scope="${scope}"`,
      );
      await expectError(res, 403, "insufficient_scope");
    }
    // webhooks:read is enough to read the log (of its own subscriptions: none here).
    const own = await call(reader, "GET", list);
    await expectError(own, 404, "not_found");
  });
});

describe("a subscription that fails every attempt for the period is disabled", () => {
  it("shows disabled_at and disabled_reason, gets nothing more, and a PUT enables it again", async () => {
    let healthy = false;
    const failing = receiver.route("/disable/failing", () => ({ status: healthy ? 200 : 503 }));
    const control = receiver.route("/disable/control");
    const subscription = await subscribe(foreign, failing.url);
    await subscribe(foreign, control.url);
    const startedAt = Date.now();
    await createContact(otherOrgId, "First");

    const disabled = await waitFor(async () => {
      const res = await call(foreign, "GET", `${PATH}/${subscription.id}`);
      const body = (await res.json()) as SubscriptionBody;
      return body.disabled_at ? body : undefined;
    }, 20_000, "the subscription disabled");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2000);
    expect(disabled.disabled_at).toMatch(RFC3339);
    expect(disabled.updated_at).toBe(subscription.updated_at);
    expect(disabled.disabled_reason).toMatch(/^every delivery attempt since \S+ failed \(\d+ attempts; the last: HTTP 503\); update the subscription \(PUT\) to enable it again$/);
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
    expect(enabled).toMatchObject({ id: subscription.id, target_url: failing.url, disabled_at: null, disabled_reason: null });
    expect(Date.parse(enabled.updated_at)).toBeGreaterThan(Date.parse(subscription.updated_at));
    // A second PUT changing nothing leaves it as it is.
    const again = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    expect(await again.json()).toEqual(enabled);

    await createContact(otherOrgId, "Third");
    const third = await waitFor(() => control.requests[2], 15_000, "the third event at the control");
    const arrived = await waitFor(() => failing.requests.find((r) => r.headers["webhook-id"] === third.headers["webhook-id"]), 15_000, "the third event at the re-enabled subscription");
    expect(JSON.parse(arrived.body).data.first_name).toBe("Third");
    expect(failing.requests.length).toBe(sent + 1);
  });

  it("re-enabled while its receiver still fails: the streak starts again at the PUT, not at the old failures", async () => {
    const failing = receiver.route("/disable/still-failing", () => ({ status: 500 }));
    const subscription = await subscribe(foreign, failing.url);
    await createContact(otherOrgId, "Fourth");
    await waitFor(async () => ((await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody).disabled_at || undefined, 20_000, "disabled");
    const put = await call(foreign, "PUT", `${PATH}/${subscription.id}`, {});
    const enabled = (await put.json()) as SubscriptionBody;
    expect(enabled.disabled_at).toBeNull();
    const sent = failing.requests.length;
    await createContact(otherOrgId, "Fifth");
    // Its first failures after the PUT (the old streak is long enough, but it ended at the PUT) leave it enabled ...
    await waitFor(async () => {
      const log = await attempts(foreign, subscription.id);
      return log.filter((a) => Date.parse(a.attempted_at) > Date.parse(enabled.updated_at)).length >= 2 || undefined;
    }, 15_000, "two failures after the PUT");
    expect(failing.requests.length).toBeGreaterThan(sent);
    const meanwhile = (await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody;
    expect(meanwhile.disabled_at).toBeNull();
    // ... until they too have lasted the period.
    const again = await waitFor(async () => {
      const body = (await (await call(foreign, "GET", `${PATH}/${subscription.id}`)).json()) as SubscriptionBody;
      return body.disabled_at ? body : undefined;
    }, 20_000, "disabled again");
    expect(Date.parse(again.disabled_at!) - Date.parse(enabled.updated_at)).toBeGreaterThanOrEqual(2000);
  });

  it("DisableSubscription (the delivery service's RPC): only the owner's, not one changed since the streak began, once", async () => {
    const hooks = webhook.client(WebhookService);
    const owner = { organisationId: otherOrgId, clientId: foreign.id };
    const target = receiver.route("/disable/rpc");
    const { subscription } = await hooks.createSubscription({ owner, targetUrl: target.url, eventType: EventType.CONTACT_UPDATED });
    const before = new Date(Date.now() - 60_000);
    const after = new Date(Date.now() + 1000);
    const request = (o: typeof owner, failingSince: Date) => ({ owner: o, id: subscription!.id, failingSince: timestampFromDate(failingSince), reason: "every attempt failed" });
    const code = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => ConnectError.from(err).code);

    expect(await code(hooks.disableSubscription(request({ ...owner, clientId: app.id }, after)))).toBe(Code.NotFound);
    expect(await code(hooks.disableSubscription({ ...request(owner, after), reason: " " }))).toBe(Code.InvalidArgument);
    expect(await code(hooks.disableSubscription({ ...request(owner, after), failingSince: undefined }))).toBe(Code.InvalidArgument);
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
    const subscribers = (await hooks.listSubscribers({ organisationId: otherOrgId, eventType: EventType.CONTACT_UPDATED })).subscribers;
    expect(subscribers.map((s) => s.subscriptionId)).not.toContain(subscription!.id);
    await hooks.updateSubscription({ owner, id: subscription!.id });
    const back = (await hooks.listSubscribers({ organisationId: otherOrgId, eventType: EventType.CONTACT_UPDATED })).subscribers;
    expect(back.map((s) => s.subscriptionId)).toContain(subscription!.id);
  });

  it("a subscription that fails but not yet for the period stays enabled", async () => {
    // The first test's subscription failed once then succeeded: still enabled.
    const res = await call(app, "GET", PATH);
    const all = (await res.json()) as SubscriptionBody[];
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((s) => s.disabled_at === null && s.disabled_reason === null)).toBe(true);
  });
});
