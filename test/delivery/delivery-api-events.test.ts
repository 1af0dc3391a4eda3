// A subscription's events over REST (GET …/subscriptions/{id}/events): one
// entry per event with its delivery's state, including an event whose first
// POST is still open, which the delivery log (attempts) does not list yet.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../support/api-client.js";
import { waitFor } from "../support/processes.js";
import {
  app,
  attempts,
  base,
  call,
  contactsOnly,
  createContact,
  DELIVERY_KEYS,
  foreign,
  orgId,
  PATH,
  RFC3339,
  receiver,
  sibling,
  subscribe,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

// A POST held open for 3 s must not time out.
useDeliveryApiSuite({ DELIVERY_TIMEOUT_MS: "5000" });

type EventBody = Record<string, unknown> & { id: number; status: string };

async function events(path: string, client = app): Promise<{ res: Response; body: EventBody[] }> {
  const res = await call(client, "GET", path);
  const body = (await res.json()) as EventBody[];
  expect(res.status, JSON.stringify(body)).toBe(200);
  return { res, body };
}

describe("a subscription's events", () => {
  let subscriptionId: number;

  beforeAll(async () => {
    // The first POST is answered after 3 s; the second 500, then 200.
    const route = receiver.route("/events/held", (n) =>
      n === 1 ? { status: 200, delayMs: 3000 } : n === 2 ? { status: 500 } : { status: 200 },
    );
    const subscription = await subscribe(app, route.url);
    subscriptionId = subscription.id;
    await createContact(orgId, "Ada");
    await waitFor(() => route.requests.length === 1 || undefined, 20_000, "the first POST");
  });

  it("lists an event whose first POST is still open as pending, before the delivery log has an attempt of it", async () => {
    const { res, body } = await events(`${PATH}/${subscriptionId}/events`);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("subscription-state")).toBe("active");
    expect(body).toHaveLength(1);
    expect(Object.keys(body[0]!).sort()).toEqual(DELIVERY_KEYS);
    expect(body[0]).toMatchObject({
      subscription_id: subscriptionId,
      event_type: "contact.created",
      status: "pending",
      status_code: null,
      error: null,
    });
    // The attempt being made counts (as in the retry route's answer); next_retry_at is then now.
    expect(body[0]!.attempts).toBe(1);
    expect(body[0]!.next_retry_at).toMatch(RFC3339);
    expect(await attempts(app, subscriptionId)).toEqual([]);
  });

  it("each entry is one event's delivery across its attempts, newest first, with the id the log and the retry route use", async () => {
    await createContact(orgId, "Grace");
    const log = await waitFor(
      async () => {
        const list = await attempts(app, subscriptionId);
        return list.length === 3 ? list : undefined;
      },
      20_000,
      "three attempts: the held one, then 500 and 200",
    );
    const { body } = await events(`${PATH}/${subscriptionId}/events`);
    expect(body).toHaveLength(2);
    const [grace, ada] = body;
    // The log: Grace's 200 and 500 (newest first), then Ada's held 200.
    expect(grace).toMatchObject({
      id: log[0]!.delivery_id,
      event_id: log[0]!.event_id,
      status: "succeeded",
      attempts: 2,
      status_code: 200,
      error: null,
      next_retry_at: null,
    });
    expect(ada).toMatchObject({
      id: log[2]!.delivery_id,
      event_id: log[2]!.event_id,
      status: "succeeded",
      attempts: 1,
      status_code: 200,
      error: null,
      next_retry_at: null,
    });
    expect(grace!.id).toBeGreaterThan(ada!.id);
    for (const e of body) expect(e.created_at).toMatch(RFC3339);
  });

  it("pages with ?limit= and a Link header; a bad limit or cursor is 400", async () => {
    const { body: all } = await events(`${PATH}/${subscriptionId}/events`);
    const { res, body } = await events(`${PATH}/${subscriptionId}/events?limit=1`);
    expect(body).toEqual([all[0]]);
    const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link") ?? "");
    expect(link?.[1]).toMatch(new RegExp(`^${base}${PATH}/${subscriptionId}/events\\?limit=1&cursor=`));
    const next = await events(link![1]!);
    expect(next.body).toEqual([all[1]]);
    expect(next.res.headers.get("link")).toBeNull();
    await expectError(
      await call(app, "GET", `${PATH}/${subscriptionId}/events?limit=101`),
      400,
      "invalid_request",
      /^limit: /,
    );
    await expectError(
      await call(app, "GET", `${PATH}/${subscriptionId}/events?cursor=nonsense`),
      400,
      "invalid_request",
      /^cursor: /,
    );
  });

  it("another application's or organisation's subscription is 404, an id that is not a positive integer 400; 401 without a token, 403 without webhooks:read", async () => {
    for (const other of [sibling, foreign])
      await expectError(await call(other, "GET", `${PATH}/${subscriptionId}/events`), 404, "not_found");
    await expectError(await call(app, "GET", `${PATH}/999999999/events`), 404, "not_found");
    await expectError(
      await call(app, "GET", `${PATH}/abc/events`),
      400,
      "invalid_request",
      'id: expected a positive integer, not "abc"',
    );
    await expectError(await call(undefined, "GET", `${PATH}/${subscriptionId}/events`), 401, "invalid_token");
    await expectError(await call(contactsOnly, "GET", `${PATH}/${subscriptionId}/events`), 403, "insufficient_scope");
  });

  it("a deleted subscription's events stay readable by its pair, its state deleted", async () => {
    expect((await call(app, "DELETE", `${PATH}/${subscriptionId}`)).status).toBe(204);
    const { res, body } = await events(`${PATH}/${subscriptionId}/events`);
    expect(res.headers.get("subscription-state")).toBe("deleted");
    expect(res.headers.get("subscription-state-reason")).toMatch(/^deleted at .+ by its owner \(DELETE\)$/);
    expect(body).toHaveLength(2);
    await expectError(await call(sibling, "GET", `${PATH}/${subscriptionId}/events`), 404, "not_found");
  });
});
