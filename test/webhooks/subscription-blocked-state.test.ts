// An ordered subscription whose head (its oldest pending delivery, in commit
// order) has failed and waits for its retry shows blocked_since (the head's
// first failed attempt) and blocked_delivery_id, on GET and in the list; null
// for a head that has not failed, for an unordered subscription, and once the
// head gave up (the next one is the head then). Another owner reads nothing
// of it.
//
// The ordered claim and fan-out are built elsewhere: this file sets up the
// delivery rows the fan-out and the workers would leave (an ordered
// subscription's pending deliveries and a head's failed attempts) in its own
// database, due an hour from now so that no worker touches them, and reads
// them through REST.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import {
  app,
  base,
  call,
  foreign,
  orgId,
  otherOrgId,
  PATH,
  platform,
  receiver,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

useDeliveryApiSuite();

interface Shown {
  id: number;
  ordered: boolean;
  throttled_until: string | null;
  blocked_since: string | null;
  blocked_delivery_id: number | null;
}

let db: pg.Client;

beforeAll(async () => {
  db = new pg.Client({ connectionString: platform.db.url });
  await db.connect();
});

afterAll(async () => {
  await db?.end();
});

async function create(ordered: boolean): Promise<number> {
  const res = await call(app, "POST", PATH, {
    target_url: receiver.route(`/blocked/${randomUUID()}`).url,
    event_type: "contact.created",
    ordered,
  });
  const body = (await res.json()) as Shown;
  expect(res.status, JSON.stringify(body)).toBe(201);
  expect(body.ordered).toBe(ordered);
  return body.id;
}

async function getOne(id: number): Promise<Shown> {
  const res = await call(app, "GET", `${PATH}/${id}`);
  const body = (await res.json()) as Shown;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

async function listed(id: number): Promise<Shown | undefined> {
  const res = await call(app, "GET", `${PATH}?limit=100`);
  const body = (await res.json()) as Shown[];
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.find((s) => s.id === id);
}

/** The app's subscription as the MCP tool list_webhook_subscriptions shows it (a raw tools/call, as an agent's HTTP client sends it). */
async function mcpListed(id: number): Promise<Shown | undefined> {
  const form = new URLSearchParams({
    grant_type: "client_credentials",
    client_id: app.id,
    client_secret: app.secret,
    scope: "webhooks:read",
    resource: `${base}/mcp`,
  });
  const token = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form.toString(),
  });
  const { access_token } = (await token.json()) as { access_token: string };
  const res = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      authorization: `Bearer ${access_token}`,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "list_webhook_subscriptions", arguments: { limit: 100 } },
    }),
  });
  const body = (await res.json()) as { result: { isError?: boolean; structuredContent: { subscriptions: Shown[] } } };
  expect(res.status, JSON.stringify(body)).toBe(200);
  expect(body.result.isError ?? false, JSON.stringify(body)).toBe(false);
  return body.result.structuredContent.subscriptions.find((s) => s.id === id);
}

/** A pending delivery of the app's subscription, as the fan-out writes it (ordered: with its event's stream sequence), due in an hour. */
async function pending(subscriptionId: number, sequence: number, ordered = true): Promise<number> {
  const eventId = randomUUID();
  await db.query(
    `insert into "delivery"."delivery_event" ("event_id", "event_type", "organisation_id", "body", "stream_sequence", "created_at")
     values ($1, 'contact.created', $2, '{}', $3, now())`,
    [eventId, orgId, sequence],
  );
  const { rows } = await db.query<{ id: string }>(
    `insert into "delivery"."delivery" ("event_id", "subscription_id", "organisation_id", "client_id", "event_type", "status", "next_attempt_at",
       "ordered", "stream_sequence", "created_at", "updated_at")
     values ($1, $2, $3, $4, 'contact.created', 'pending', now() + interval '1 hour', $5, $6, now(), now()) returning "id"`,
    [eventId, subscriptionId, orgId, app.id, ordered, ordered ? sequence : null],
  );
  return Number(rows[0]!.id);
}

/** An attempt of the delivery, as a worker records it, `secondsAgo`. */
async function attempted(
  deliveryId: number,
  outcome: "failed" | "gave_up" | "succeeded",
  secondsAgo: number,
): Promise<string> {
  const { rows } = await db.query<{ at: Date }>(
    `with "d" as (update "delivery"."delivery" set "attempts" = "attempts" + 1, "last_response_status" = 500, "last_error" = 'HTTP 500'
                   where "id" = $1 returning *)
     insert into "delivery"."delivery_attempt" ("id", "organisation_id", "client_id", "event_id", "subscription_id", "delivery_id", "event_type",
       "attempt", "response_status", "outcome", "error", "duration_ms", "attempted_at", "next_attempt_at")
     select $2, d."organisation_id", d."client_id", d."event_id", d."subscription_id", d."id", d."event_type", d."attempts",
       case when $3 = 'succeeded' then 200 else 500 end, $3, case when $3 = 'succeeded' then '' else 'HTTP 500' end, 12,
       date_trunc('milliseconds', now()) - make_interval(secs => $4), d."next_attempt_at"
       from "d" returning "attempted_at" as "at"`,
    [deliveryId, randomUUID(), outcome, secondsAgo],
  );
  return rows[0]!.at.toISOString();
}

it("an ordered subscription's failed head: blocked_since is its first failed attempt, blocked_delivery_id its id, on GET and in the list", async () => {
  const id = await create(true);
  // Written out of commit order: the head is the lowest stream sequence, not the lowest id.
  const third = await pending(id, 1003);
  const second = await pending(id, 1002);
  const head = await pending(id, 1001);
  expect(third).toBeLessThan(head);
  // Not failed yet: not blocked.
  expect(await getOne(id)).toMatchObject({ blocked_since: null, blocked_delivery_id: null, throttled_until: null });

  const firstFailure = await attempted(head, "failed", 60);
  await attempted(head, "failed", 30);
  const blocked = { blocked_since: firstFailure, blocked_delivery_id: head, throttled_until: null };
  expect(await getOne(id)).toMatchObject(blocked);
  expect(await listed(id)).toMatchObject(blocked);
  expect(await mcpListed(id)).toEqual(await getOne(id));

  // Another owner's application asks the delivery service about the same id: nothing of it.
  const states = await platform.delivery
    .client(DeliveryService)
    .getDeliveryStates({ owner: { organisationId: otherOrgId, clientId: foreign.id }, subscriptionIds: [BigInt(id)] });
  expect(states.states).toEqual([]);
  expect((await call(foreign, "GET", `${PATH}/${id}`)).status).toBe(404);

  // The head gives up: the next one is the head, and it has not failed.
  await db.query(`update "delivery"."delivery" set "status" = 'gave_up', "next_attempt_at" = null where "id" = $1`, [
    head,
  ]);
  expect(await getOne(id)).toMatchObject({ blocked_since: null, blocked_delivery_id: null });
  const again = await attempted(second, "failed", 5);
  expect(await getOne(id)).toMatchObject({ blocked_since: again, blocked_delivery_id: second });
});

it("a head sent again after it gave up is blocked from its new failure on, not its old ones", async () => {
  const id = await create(true);
  const head = await pending(id, 2001);
  await pending(id, 2002);
  await attempted(head, "failed", 300);
  await attempted(head, "gave_up", 200);
  const since = await attempted(head, "failed", 10);
  expect(await getOne(id)).toMatchObject({ blocked_since: since, blocked_delivery_id: head });
});

it("an unordered subscription with a failing delivery is never blocked", async () => {
  const id = await create(false);
  const d = await pending(id, 3001, false);
  await attempted(d, "failed", 20);
  expect(await getOne(id)).toMatchObject({ ordered: false, blocked_since: null, blocked_delivery_id: null });
  expect(await listed(id)).toMatchObject({ blocked_since: null, blocked_delivery_id: null });
});

// Last: it stops the delivery service.
it("with the delivery service down, a subscription still reads (GET and the list), its delivery state null", async () => {
  const id = await create(true);
  const head = await pending(id, 4001);
  await attempted(head, "failed", 10);
  expect(await getOne(id)).toMatchObject({ blocked_delivery_id: head });
  await platform.delivery.stop();
  expect(await getOne(id)).toMatchObject({
    id,
    ordered: true,
    throttled_until: null,
    blocked_since: null,
    blocked_delivery_id: null,
  });
  expect(await listed(id)).toMatchObject({ id, blocked_since: null, blocked_delivery_id: null });
});
