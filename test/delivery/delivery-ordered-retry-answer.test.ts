// Honest answers for an ordered subscription: a delivery behind a failing
// head is sent only when it becomes the head, so a manual retry of it
// (REST) answers as its next_retry_at the head's next attempt (the one the
// delivery log shows for the head), not now, and the delivery service's
// ListDeliveries shows the same time for every delivery behind the head;
// the retried delivery reaches the receiver after the head, not before that
// time. The head itself answers its own schedule.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { waitFor } from "../support/processes.js";
import type { Received } from "../support/receiver.js";
import {
  app,
  attempts,
  call,
  createContact,
  DELIVERY_KEYS,
  orgId,
  PATH,
  platform,
  receiver,
  RFC3339,
  useDeliveryApiSuite,
} from "../support/delivery-api-suite.js";

// A failed head waits 4 s for its next attempt: long enough to look at the answers meanwhile.
const RETRY_MS = 4000;
useDeliveryApiSuite({
  DELIVERY_RETRY_SCHEDULE_SECONDS: Array.from({ length: 10 }, () => String(RETRY_MS / 1000)).join(","),
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "3600",
  WEBHOOK_DISABLE_AFTER_FAILURES: "1000",
});

const SLACK_MS = 250;
const eventIdOf = (r: Received) => String(r.headers["webhook-id"]).toLowerCase();

interface DeliveryBody {
  id: number;
  event_id: string;
  status: string;
  next_retry_at: string | null;
}

it("a retry of an ordered delivery behind a failing head answers the head's next attempt, and ListDeliveries shows it too", async () => {
  let fixed = false;
  const route = receiver.route(`/ordered-answer/${randomUUID()}`, (n) =>
    !fixed && eventIdOf(route.requests[n - 1]!) === eventIdOf(route.requests[0]!) ? { status: 500 } : { status: 200 },
  );
  const created = await call(app, "POST", PATH, {
    target_url: route.url,
    event_type: "contact.created",
    ordered: true,
  });
  const sub = (await created.json()) as { id: number };
  expect(created.status, JSON.stringify(sub)).toBe(201);
  for (const name of ["Head", "Second", "Third"]) await createContact(orgId, name);

  const owner = { organisationId: orgId, clientId: app.id };
  const deliveries = platform.delivery.client(DeliveryService);
  const rows = await waitFor(
    async () => {
      const r = (await deliveries.listDeliveries({ owner, subscriptionId: BigInt(sub.id), pageSize: 100 })).deliveries;
      return r.length === 3 ? r : undefined;
    },
    30_000,
    "the three deliveries",
  );
  const headEvent = eventIdOf(await waitFor(() => route.requests[0], 30_000, "the head's first POST"));
  const behind = rows.filter((d) => d.eventId.toLowerCase() !== headEvent);
  expect(behind).toHaveLength(2);
  const second = behind.reduce((a, b) => (a.id < b.id ? a : b));

  // Between two of the head's attempts (the log unchanged around the answers): its next attempt is the time to show.
  const { answer, headNext, listed } = await waitFor(
    async () => {
      const log = await attempts(app, sub.id);
      const last = log[0];
      if (
        last?.outcome !== "failed" ||
        !last.next_retry_at ||
        Date.parse(last.next_retry_at) - Date.now() < RETRY_MS / 2
      )
        return undefined;
      const res = await call(app, "POST", `${PATH}/${sub.id}/deliveries/${second.id}/retry`);
      const body = (await res.json()) as DeliveryBody;
      expect(res.status, JSON.stringify(body)).toBe(202);
      const list = (await deliveries.listDeliveries({ owner, subscriptionId: BigInt(sub.id), pageSize: 100 }))
        .deliveries;
      if ((await attempts(app, sub.id)).length !== log.length) return undefined;
      return { answer: body, headNext: last.next_retry_at, listed: list };
    },
    30_000,
    "a look between two of the head's attempts",
  );

  expect(Object.keys(answer).sort()).toEqual(DELIVERY_KEYS);
  expect(answer).toMatchObject({ id: Number(second.id), status: "pending" });
  expect(answer.next_retry_at).toMatch(RFC3339);
  expect(answer.next_retry_at, "not before the head's next attempt").toBe(headNext);
  for (const d of listed) {
    expect(d.status).toBe("pending");
    expect(timestampDate(d.nextAttemptTime!).toISOString(), `delivery ${d.id}`).toBe(headNext);
  }

  // The receiver recovers: the head goes at its time, then the retried one, not before that time.
  fixed = true;
  await waitFor(() => (new Set(route.requests.map(eventIdOf)).size === 3 ? true : undefined), 30_000, "every event");
  const arrived = route.requests.find((r) => eventIdOf(r) === second.eventId.toLowerCase())!;
  expect(arrived.at).toBeGreaterThanOrEqual(Date.parse(headNext) - SLACK_MS);
  expect(route.requests.indexOf(arrived)).toBeGreaterThan(route.requests.map(eventIdOf).lastIndexOf(headEvent));
}, 120_000);

it("a retry of an ordered delivery older than the blocked head makes it the head: it answers now and goes before the head's next attempt", async () => {
  let fixed = false;
  // The first event is answered 200; every other one 500 until fixed.
  const route = receiver.route(`/ordered-older/${randomUUID()}`, (n) =>
    !fixed && eventIdOf(route.requests[n - 1]!) !== eventIdOf(route.requests[0]!) ? { status: 500 } : { status: 200 },
  );
  const created = await call(app, "POST", PATH, {
    target_url: route.url,
    event_type: "contact.created",
    ordered: true,
  });
  const sub = (await created.json()) as { id: number };
  expect(created.status, JSON.stringify(sub)).toBe(201);
  await createContact(orgId, "Older");
  const [done] = await waitFor(
    async () => {
      const log = await attempts(app, sub.id);
      return log[0]?.outcome === "succeeded" ? log : undefined;
    },
    30_000,
    "the first event delivered",
  );
  await createContact(orgId, "Blocked");
  const failed = await waitFor(
    async () => {
      const log = await attempts(app, sub.id);
      return log[0]?.outcome === "failed" ? log[0] : undefined;
    },
    30_000,
    "the new head failed",
  );
  expect(failed.delivery_id).not.toBe(done!.delivery_id);

  const before = route.requests.length;
  const sent = Date.now();
  const res = await call(app, "POST", `${PATH}/${sub.id}/deliveries/${done!.delivery_id}/retry`);
  const answered = Date.now();
  const body = (await res.json()) as DeliveryBody;
  expect(res.status, JSON.stringify(body)).toBe(202);
  expect(body.status).toBe("pending");
  const at = Date.parse(body.next_retry_at!);
  expect(at, "now: it is the head again").toBeGreaterThanOrEqual(sent - SLACK_MS);
  expect(at).toBeLessThanOrEqual(answered + SLACK_MS);
  // It goes next, before the blocked head's next attempt.
  const again = await waitFor(() => route.requests[before], 30_000, "the retried POST");
  expect(eventIdOf(again)).toBe(done!.event_id);
  fixed = true;
  await waitFor(
    async () =>
      (await attempts(app, sub.id))[0]?.outcome === "succeeded" && route.requests.length >= before + 2
        ? true
        : undefined,
    30_000,
    "the head after it",
  );
}, 120_000);
