// The webhook service's lists (newest first, paged), the subscribers the
// delivery service asks for, the pair-wide delete a revoked grant triggers,
// and the service's readiness and internal credential.
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { rpcError } from "../support/rpc.js";
import { client, EVENT_TYPE_ERROR, listAll, newPair, strict, useWebhookSuite } from "../support/webhook-suite.js";

useWebhookSuite();

describe("lists", () => {
  it("lists a pair's subscriptions newest first and pages with a token", async () => {
    const owner = newPair();
    const ids: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await client.createSubscription({
        owner,
        targetUrl: `https://hooks.receiver.test/p${i}`,
        eventType: EventType.CONTACT_CREATED,
      });
      ids.push(res.subscription!.id);
    }
    // Someone else's subscription is never listed.
    await client.createSubscription({
      owner: { ...owner, clientId: `${owner.clientId}-other` } as Owner,
      targetUrl: "https://hooks.receiver.test/p9",
      eventType: EventType.CONTACT_CREATED,
    });
    const newestFirst = [...ids].reverse();
    const all = await client.listSubscriptions({ owner });
    expect(all.subscriptions.map((s) => s.id)).toEqual(newestFirst);
    expect(all.nextPageToken).toBe("");

    const first = await client.listSubscriptions({ owner, pageSize: 2 });
    expect(first.subscriptions.map((s) => s.targetUrl)).toEqual([
      "https://hooks.receiver.test/p4",
      "https://hooks.receiver.test/p3",
    ]);
    const second = await client.listSubscriptions({ owner, pageSize: 2, pageToken: first.nextPageToken });
    expect(second.subscriptions.map((s) => s.id)).toEqual(newestFirst.slice(2, 4));
    const third = await client.listSubscriptions({ owner, pageSize: 2, pageToken: second.nextPageToken });
    expect(third.subscriptions.map((s) => s.id)).toEqual(newestFirst.slice(4));
    expect(third.nextPageToken).toBe("");

    for (const pageSize of [101, -1]) {
      const err = await rpcError(client.listSubscriptions({ owner, pageSize }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe("page_size: expected 1 to 100");
    }
    for (const pageToken of [
      "garbage",
      Buffer.from(JSON.stringify(["0"])).toString("base64url"),
      Buffer.from("[1]").toString("base64url"),
      Buffer.from('["99999999999999999999"]').toString("base64url"),
    ]) {
      expect((await rpcError(client.listSubscriptions({ owner, pageToken }))).rawMessage).toBe(
        "page_token: not a token this service issued",
      );
    }
  });

  it("lists an organisation's subscribers of one event type across clients, with their secrets", async () => {
    const org = randomUUID();
    const a = await client.createSubscription({
      owner: { organisationId: org, clientId: "app-a" } as Owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_CREATED,
    });
    const b = await client.createSubscription({
      owner: { organisationId: org, clientId: "app-b" } as Owner,
      targetUrl: "https://other.receiver.test/b",
      eventType: EventType.CONTACT_CREATED,
    });
    const c = await client.createSubscription({
      owner: { organisationId: org, clientId: "app-c" } as Owner,
      targetUrl: "https://hooks.receiver.test/c",
      eventType: EventType.CONTACT_UPDATED,
    });
    await client.createSubscription({
      owner: { organisationId: randomUUID(), clientId: "app-a" } as Owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_CREATED,
    });

    const created = await client.listSubscribers({ organisationId: org, eventType: EventType.CONTACT_CREATED });
    expect(
      created.subscribers.map((s) => ({
        id: s.subscriptionId,
        clientId: s.clientId,
        targetUrl: s.targetUrl,
        secret: s.secret,
      })),
    ).toEqual([
      { id: a.subscription!.id, clientId: "app-a", targetUrl: "https://hooks.receiver.test/a", secret: a.secret },
      { id: b.subscription!.id, clientId: "app-b", targetUrl: "https://other.receiver.test/b", secret: b.secret },
    ]);
    const updated = await client.listSubscribers({
      organisationId: org.toUpperCase(),
      eventType: EventType.CONTACT_UPDATED,
    });
    expect(updated.subscribers.map((s) => [s.subscriptionId, s.clientId, s.secret])).toEqual([
      [c.subscription!.id, "app-c", c.secret],
    ]);
    expect(
      (await client.listSubscribers({ organisationId: randomUUID(), eventType: EventType.CONTACT_CREATED }))
        .subscribers,
    ).toEqual([]);

    expect(
      (await rpcError(client.listSubscribers({ organisationId: org, eventType: EventType.UNSPECIFIED }))).rawMessage,
    ).toBe(EVENT_TYPE_ERROR);
    expect(
      (await rpcError(client.listSubscribers({ organisationId: "x", eventType: EventType.CONTACT_CREATED })))
        .rawMessage,
    ).toBe("organisation_id: expected a UUID");
  });

  it("answers several lookups in one call, each as ListSubscribers would, in the order asked", async () => {
    const org = randomUUID();
    const other = randomUUID();
    const a = await client.createSubscription({
      owner: { organisationId: org, clientId: "app-a" } as Owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_CREATED,
    });
    const c = await client.createSubscription({
      owner: { organisationId: org, clientId: "app-c" } as Owner,
      targetUrl: "https://hooks.receiver.test/c",
      eventType: EventType.CONTACT_UPDATED,
    });
    const o = await client.createSubscription({
      owner: { organisationId: other, clientId: "app-o" } as Owner,
      targetUrl: "https://hooks.receiver.test/o",
      eventType: EventType.CONTACT_CREATED,
    });
    const lookups = [
      { organisationId: other, eventType: EventType.CONTACT_CREATED, includeDisabled: true },
      { organisationId: randomUUID(), eventType: EventType.CONTACT_CREATED, includeDisabled: true },
      { organisationId: org.toUpperCase(), eventType: EventType.CONTACT_UPDATED, includeDisabled: false },
      { organisationId: org, eventType: EventType.CONTACT_CREATED, includeDisabled: true },
    ];
    const { results } = await client.listSubscribersOfMany({ lookups });
    expect(results.map((r) => r.subscribers.map((s) => [s.subscriptionId, s.clientId, s.secret]))).toEqual([
      [[o.subscription!.id, "app-o", o.secret]],
      [],
      [[c.subscription!.id, "app-c", c.secret]],
      [[a.subscription!.id, "app-a", a.secret]],
    ]);
    // The same answers as one ListSubscribers each.
    for (const [i, l] of lookups.entries())
      expect(results[i]!.subscribers).toEqual((await client.listSubscribers(l)).subscribers);
    expect((await client.listSubscribersOfMany({ lookups: [] })).results).toEqual([]);

    expect(
      (
        await rpcError(
          client.listSubscribersOfMany({
            lookups: [lookups[0]!, { organisationId: "x", eventType: EventType.CONTACT_CREATED }],
          }),
        )
      ).rawMessage,
    ).toBe("lookups[1].organisation_id: expected a UUID");
    expect(
      (
        await rpcError(
          client.listSubscribersOfMany({ lookups: [{ organisationId: org, eventType: EventType.UNSPECIFIED }] }),
        )
      ).rawMessage,
    ).toBe(EVENT_TYPE_ERROR);
    const tooMany = Array.from({ length: 1001 }, () => lookups[0]!);
    expect((await rpcError(client.listSubscribersOfMany({ lookups: tooMany }))).rawMessage).toBe(
      "lookups: at most 1000",
    );
  });
});

describe("pair-wide delete", () => {
  it("deletes every subscription of the pair and nothing else", async () => {
    const owner = newPair("app-revoked");
    const sameOrgOtherClient = { organisationId: owner.organisationId, clientId: "app-kept" } as Owner;
    const otherOrgSameClient = { organisationId: randomUUID(), clientId: owner.clientId } as Owner;
    for (const [i, eventType] of [
      EventType.CONTACT_CREATED,
      EventType.CONTACT_UPDATED,
      EventType.CONTACT_CREATED,
    ].entries()) {
      await client.createSubscription({ owner, targetUrl: `https://hooks.receiver.test/r${i}`, eventType });
    }
    const kept1 = await client.createSubscription({
      owner: sameOrgOtherClient,
      targetUrl: "https://hooks.receiver.test/k",
      eventType: EventType.CONTACT_CREATED,
    });
    const kept2 = await client.createSubscription({
      owner: otherOrgSameClient,
      targetUrl: "https://hooks.receiver.test/k",
      eventType: EventType.CONTACT_CREATED,
    });

    expect((await client.deletePairSubscriptions({ owner })).deletedCount).toBe(3);
    expect(await listAll(owner)).toHaveLength(0);
    expect(
      (
        await client.listSubscribers({ organisationId: owner.organisationId, eventType: EventType.CONTACT_CREATED })
      ).subscribers.map((s) => s.clientId),
    ).toEqual(["app-kept"]);
    expect((await listAll(sameOrgOtherClient)).map((s) => s.id)).toEqual([kept1.subscription!.id]);
    expect((await listAll(otherOrgSameClient)).map((s) => s.id)).toEqual([kept2.subscription!.id]);
    expect((await client.deletePairSubscriptions({ owner })).deletedCount).toBe(0);
  });
});

describe("service", () => {
  it("is ready when its database and bus are", async () => {
    const res = await fetch(`${strict.server.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", checks: { database: "ok", bus: "ok" } });
  });

  it("refuses calls without the internal credential", async () => {
    const anonymous = strict.client(WebhookService, "");
    const err = await rpcError(
      anonymous.listSubscribers({ organisationId: randomUUID(), eventType: EventType.CONTACT_CREATED }),
    );
    expect(err.code).toBe(Code.Unauthenticated);
  });
});
