// Webhook delivery end to end, as a receiver sees it, when the receiver
// fails: a delivery retried on the schedule (and as Retry-After asks), timed
// out, given up and sent once more by hand, and a 410 Gone that deletes the
// subscription.
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import type { Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import {
  createContact,
  delivery,
  headers,
  hooks,
  log,
  RFC3339,
  receiver,
  subscribe,
  TOKEN,
  useDeliveryE2eSuite,
} from "../support/delivery-e2e-suite.js";
import { spawnProcess, waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";

useDeliveryE2eSuite();

describe("retries", () => {
  it("500 then 200: delivered on the retry, with the same webhook-id, and both attempts logged newest first", async () => {
    const sub = await subscribe("Retry", EventType.CONTACT_CREATED, (n) =>
      n === 1 ? { status: 500 } : { status: 200 },
    );
    await createContact(sub.organisationId);
    await waitFor(() => sub.route.requests.length >= 2, 15_000, "retry");
    const [a, b] = sub.route.requests;
    expect(b!.headers["webhook-id"]).toBe(a!.headers["webhook-id"]);
    expect(b!.body).toBe(a!.body);
    new Webhook(sub.secret).verify(b!.body, headers(b!.headers));
    const attempts = await waitFor(async () => {
      const res = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return res.attempts.length === 2 ? res.attempts : undefined;
    });
    expect(attempts.map((x) => [x.attempt, x.outcome, x.responseStatus, x.error])).toEqual([
      [2, "succeeded", 200, ""],
      [1, "failed", 500, "HTTP 500"],
    ]);
    expect(attempts[1]!.nextAttemptTime).toBeDefined();
    const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      status: "succeeded",
      attempts: 2,
      responseStatus: 200,
      eventType: "contact.created",
    });
    expect(sub.route.requests).toHaveLength(2);
  });

  it("honours Retry-After (within the cap)", async () => {
    const sub = await subscribe("RetryAfter", EventType.CONTACT_CREATED, (n) =>
      n === 1 ? { status: 503, headers: { "retry-after": "2" } } : { status: 200 },
    );
    await createContact(sub.organisationId);
    await waitFor(() => sub.route.requests.length >= 2, 15_000, "retry");
    const [a, b] = sub.route.requests;
    // The schedule says 0.2 s; the receiver asked for 2 s.
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(1900);
  });

  it("a receiver that never answers: the attempt times out and is retried", async () => {
    const sub = await subscribe("Hang", EventType.CONTACT_CREATED, (n) => (n === 1 ? "hang" : { status: 204 }));
    await createContact(sub.organisationId);
    const attempts = await waitFor(
      async () => {
        const res = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
        return res.attempts.length === 2 ? res.attempts : undefined;
      },
      15_000,
      "timeout and retry",
    );
    expect(attempts[1]).toMatchObject({ attempt: 1, outcome: "failed", responseStatus: 0 });
    expect(attempts[1]!.error).toMatch(/^timeout: /);
    expect(attempts[1]!.durationMs).toBeGreaterThanOrEqual(900);
    expect(attempts[1]!.durationMs).toBeLessThan(5000);
    expect(attempts[0]).toMatchObject({ attempt: 2, outcome: "succeeded", responseStatus: 204 });
  });

  it("gives up when the schedule is exhausted; operators list it; RetryDelivery sends it once more", async () => {
    let healthy = false;
    const sub = await subscribe("GiveUp", EventType.CONTACT_CREATED, () =>
      healthy ? { status: 200 } : { status: 502 },
    );
    await createContact(sub.organisationId);
    // The first attempt and the schedule's three retries.
    const [gaveUp] = await waitFor(
      async () => {
        const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
        return deliveries[0]?.status === "gave_up" ? deliveries : undefined;
      },
      15_000,
      "gave_up",
    );
    expect(gaveUp).toMatchObject({ attempts: 4, responseStatus: 502, error: "HTTP 502" });
    expect(gaveUp!.nextAttemptTime).toBeUndefined();
    expect(sub.route.requests).toHaveLength(4);
    const { attempts } = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(attempts.map((a) => a.outcome)).toEqual(["gave_up", "failed", "failed", "failed"]);

    const failed = await log.listFailedDeliveries({ organisationId: sub.organisationId });
    expect(failed.deliveries.map((d) => d.id)).toEqual([gaveUp!.id]);
    expect(failed.deliveries[0]!.owner).toMatchObject({
      organisationId: sub.organisationId,
      clientId: sub.owner.clientId,
    });

    // Another owner cannot retry it, nor see it.
    const stranger = { organisationId: sub.organisationId, clientId: "someone-else" } as Owner;
    expect(
      (
        await rpcError(
          log.retryDelivery({ owner: stranger, subscriptionId: sub.subscription.id, deliveryId: gaveUp!.id }),
        )
      ).code,
    ).toBe(Code.NotFound);
    expect((await log.listDeliveries({ owner: stranger, subscriptionId: sub.subscription.id })).deliveries).toEqual([]);

    // The operator's view: `bizcard deliveries failed`.
    const cli = spawnProcess(
      process.execPath,
      ["bin/bizcard.js", "deliveries", "failed", "--org", sub.organisationId, "--json"],
      {
        DELIVERY_RPC_URL: delivery.server.url,
        INTERNAL_RPC_TOKEN: TOKEN,
        DATA_DIR: undefined,
      },
    );
    let stdout = "";
    cli.child.stdout!.on("data", (d) => (stdout += d));
    expect(await cli.exited, cli.output()).toBe(0);
    expect(JSON.parse(stdout)).toEqual({
      deliveries: [
        {
          id: Number(gaveUp!.id),
          event_id: sub.route.requests[0]!.headers["webhook-id"],
          event_type: "contact.created",
          subscription_id: Number(sub.subscription.id),
          organisation_id: sub.organisationId,
          client_id: sub.owner.clientId,
          status: "gave_up",
          attempts: 4,
          status_code: 502,
          error: "HTTP 502",
          next_retry_at: null,
          created_at: expect.stringMatching(RFC3339),
          updated_at: expect.stringMatching(RFC3339),
        },
      ],
    });

    healthy = true;
    const retried = await log.retryDelivery({
      owner: sub.owner,
      subscriptionId: sub.subscription.id,
      deliveryId: gaveUp!.id,
    });
    expect(retried.delivery?.status).toBe("pending");
    await waitFor(() => sub.route.requests.length === 5, 15_000, "manual retry");
    expect(sub.route.requests[4]!.headers["webhook-id"]).toBe(sub.route.requests[0]!.headers["webhook-id"]);
    await waitFor(async () => {
      const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
      return deliveries[0]?.status === "succeeded" ? true : undefined;
    });
    expect((await log.listFailedDeliveries({ organisationId: sub.organisationId })).deliveries).toEqual([]);
  });

  it("410 Gone: the subscription is deleted and gets nothing more", async () => {
    const sub = await subscribe("Gone", EventType.CONTACT_CREATED, () => ({ status: 410 }));
    await createContact(sub.organisationId);
    await waitFor(
      async () => {
        const err = await hooks.getSubscription({ owner: sub.owner, id: sub.subscription.id }).then(
          () => undefined,
          (e: unknown) => e,
        );
        return err ? true : undefined;
      },
      15_000,
      "subscription deleted",
    );
    expect((await rpcError(hooks.getSubscription({ owner: sub.owner, id: sub.subscription.id }))).code).toBe(
      Code.NotFound,
    );
    const { deliveries } = await log.listDeliveries({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(deliveries[0]).toMatchObject({ status: "gone", attempts: 1, responseStatus: 410 });
    const { attempts } = await log.listDeliveryAttempts({ owner: sub.owner, subscriptionId: sub.subscription.id });
    expect(attempts.map((a) => a.outcome)).toEqual(["gone"]);
    // Nothing more for it; a later event of the organisation reaches a fresh subscriber only.
    const fresh = receiver.route(`/hooks/${randomUUID()}`);
    await hooks.createSubscription({ owner: sub.owner, targetUrl: fresh.url, eventType: EventType.CONTACT_CREATED });
    await createContact(sub.organisationId);
    await waitFor(() => fresh.requests.length === 1, 15_000, "fresh subscriber");
    expect(sub.route.requests).toHaveLength(1);
    expect(
      (
        await rpcError(
          log.retryDelivery({ owner: sub.owner, subscriptionId: sub.subscription.id, deliveryId: deliveries[0]!.id }),
        )
      ).code,
    ).toBe(Code.FailedPrecondition);
  });
});
