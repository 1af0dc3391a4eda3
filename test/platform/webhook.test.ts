// The webhook service over real RPC: subscriptions of a pair (organisation,
// client application), created, read, updated and deleted; and how a
// destination address is classified. The target_url rules over RPC are in
// webhook-target-url.test.ts, lists and the pair-wide delete in
// webhook-lists.test.ts (the setup they share: support/webhook-suite.ts).
import { randomUUID } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import type { Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { classifyIp, isPublicIp } from "../../services/shared/net/ip-address.js";
import { waitFor } from "../support/processes.js";
import { rpcError } from "../support/rpc.js";
import { client, EVENT_TYPE_ERROR, listAll, newPair, resolved, useWebhookSuite } from "../support/webhook-suite.js";

useWebhookSuite();

describe("create", () => {
  it("creates a subscription and hands out its signing secret once", async () => {
    const owner = newPair();
    const res = await client.createSubscription({
      owner,
      targetUrl: "https://hooks.receiver.test/bizcard?x=1",
      eventType: EventType.CONTACT_CREATED,
    });
    expect(res.created).toBe(true);
    expect(res.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(res.secret.slice("whsec_".length), "base64")).toHaveLength(32);
    const s = res.subscription!;
    expect(s.id).toBeGreaterThan(0n);
    expect(s.targetUrl).toBe("https://hooks.receiver.test/bizcard?x=1");
    expect(s.eventType).toBe(EventType.CONTACT_CREATED);
    expect(s.createTime).toEqual(s.updateTime);
    expect(resolved).toContain("hooks.receiver.test");

    const got = await client.getSubscription({ owner, id: s.id });
    expect(got.subscription).toEqual(s);
  });

  it("returns the existing subscription for the same target_url and event_type, without a secret", async () => {
    const owner = newPair();
    const first = await client.createSubscription({
      owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_UPDATED,
    });
    // Same URL once normalised: upper-case host, explicit default port.
    const again = await client.createSubscription({
      owner,
      targetUrl: "HTTPS://Hooks.Receiver.TEST:443/a",
      eventType: EventType.CONTACT_UPDATED,
    });
    expect(again.created).toBe(false);
    expect(again.secret).toBe("");
    expect(again.subscription).toEqual(first.subscription);

    // Another event type, or another client of the same organisation: new subscriptions.
    const otherType = await client.createSubscription({
      owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_CREATED,
    });
    expect(otherType.created).toBe(true);
    expect(otherType.subscription!.id).not.toBe(first.subscription!.id);
    const otherClient = await client.createSubscription({
      owner: { ...owner, clientId: `${owner.clientId}-2` } as Owner,
      targetUrl: "https://hooks.receiver.test/a",
      eventType: EventType.CONTACT_UPDATED,
    });
    expect(otherClient.created).toBe(true);
    expect(otherClient.secret).not.toBe(first.secret);
    expect(await listAll(owner)).toHaveLength(2);
  });

  it("creates one subscription when the same create races", async () => {
    const owner = newPair();
    const all = await Promise.all(
      Array.from({ length: 6 }, () =>
        client.createSubscription({
          owner,
          targetUrl: "https://hooks.receiver.test/race",
          eventType: EventType.CONTACT_CREATED,
        }),
      ),
    );
    expect(all.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(all.map((r) => r.subscription!.id)).size).toBe(1);
    expect(all.filter((r) => r.secret !== "")).toHaveLength(1);
    expect(await listAll(owner)).toHaveLength(1);
  });

  it("requires the owner pair", async () => {
    const body = { targetUrl: "https://hooks.receiver.test/x", eventType: EventType.CONTACT_CREATED };
    const none = await rpcError(client.createSubscription(body));
    expect(none.code).toBe(Code.InvalidArgument);
    expect(none.rawMessage).toBe("owner: required");
    const badOrg = await rpcError(
      client.createSubscription({ ...body, owner: { organisationId: "nope", clientId: "c" } }),
    );
    expect(badOrg.rawMessage).toBe("owner.organisation_id: expected a UUID");
    const noClient = await rpcError(
      client.createSubscription({ ...body, owner: { organisationId: randomUUID(), clientId: "" } }),
    );
    expect(noClient.rawMessage).toBe("owner.client_id: required");
    for (const call of [
      () => client.getSubscription({ id: 1n }),
      () => client.listSubscriptions({}),
      () => client.updateSubscription({ id: 1n, targetUrl: "https://hooks.receiver.test/" }),
      () => client.deleteSubscription({ id: 1n }),
      () => client.deletePairSubscriptions({}),
    ]) {
      expect((await rpcError(call())).rawMessage).toBe("owner: required");
    }
  });

  it("accepts only contact.created and contact.updated", async () => {
    const owner = newPair();
    for (const eventType of [EventType.UNSPECIFIED, 99 as EventType]) {
      const err = await rpcError(
        client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/e", eventType }),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe(EVENT_TYPE_ERROR);
    }
    expect(await listAll(owner)).toHaveLength(0);
  });
});

describe("read, update, delete", () => {
  it("updates only the fields that are set and bumps update_time", async () => {
    const owner = newPair();
    const { subscription: s } = await client.createSubscription({
      owner,
      targetUrl: "https://hooks.receiver.test/one",
      eventType: EventType.CONTACT_CREATED,
    });
    // The clock has moved past the stored update time (millisecond precision), so the update can be later.
    const created = timestampDate(s!.updateTime!).getTime();
    await waitFor(() => (Date.now() > created ? true : undefined), 5_000, "the clock to pass update_time");
    const moved = (await client.updateSubscription({ owner, id: s!.id, targetUrl: "https://other.receiver.test/two" }))
      .subscription!;
    expect(moved.id).toBe(s!.id);
    expect(moved.targetUrl).toBe("https://other.receiver.test/two");
    expect(moved.eventType).toBe(EventType.CONTACT_CREATED);
    expect(moved.createTime).toEqual(s!.createTime);
    expect(timestampDate(moved.updateTime!).getTime()).toBeGreaterThan(timestampDate(s!.updateTime!).getTime());

    const retyped = (await client.updateSubscription({ owner, id: s!.id, eventType: EventType.CONTACT_UPDATED }))
      .subscription!;
    expect(retyped.targetUrl).toBe("https://other.receiver.test/two");
    expect(retyped.eventType).toBe(EventType.CONTACT_UPDATED);

    // Nothing set: nothing changes.
    const same = (await client.updateSubscription({ owner, id: s!.id })).subscription!;
    expect(same).toEqual(retyped);
    expect((await client.getSubscription({ owner, id: s!.id })).subscription).toEqual(retyped);
  });

  it("refuses an update that would duplicate another subscription of the pair", async () => {
    const owner = newPair();
    const a = (
      await client.createSubscription({
        owner,
        targetUrl: "https://hooks.receiver.test/dup",
        eventType: EventType.CONTACT_CREATED,
      })
    ).subscription!;
    const b = (
      await client.createSubscription({
        owner,
        targetUrl: "https://hooks.receiver.test/dup",
        eventType: EventType.CONTACT_UPDATED,
      })
    ).subscription!;
    const err = await rpcError(client.updateSubscription({ owner, id: b.id, eventType: EventType.CONTACT_CREATED }));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe(`a subscription with this target_url and event_type already exists (id ${a.id})`);
    expect((await client.getSubscription({ owner, id: b.id })).subscription).toEqual(b);
  });

  it("checks event_type and target_url on update and changes nothing when refused", async () => {
    const owner = newPair();
    const s = (
      await client.createSubscription({
        owner,
        targetUrl: "https://hooks.receiver.test/u",
        eventType: EventType.CONTACT_CREATED,
      })
    ).subscription!;
    const badType = await rpcError(client.updateSubscription({ owner, id: s.id, eventType: EventType.UNSPECIFIED }));
    expect(badType.code).toBe(Code.InvalidArgument);
    expect(badType.rawMessage).toBe(EVENT_TYPE_ERROR);
    const unknownType = await rpcError(client.updateSubscription({ owner, id: s.id, eventType: 7 as EventType }));
    expect(unknownType.rawMessage).toBe(EVENT_TYPE_ERROR);
    const badUrl = await rpcError(
      client.updateSubscription({ owner, id: s.id, targetUrl: "http://hooks.receiver.test/u" }),
    );
    expect(badUrl.code).toBe(Code.InvalidArgument);
    expect(badUrl.rawMessage).toMatch(/^target_url: /);
    const privateUrl = await rpcError(
      client.updateSubscription({
        owner,
        id: s.id,
        targetUrl: "https://internal.receiver.test/",
        eventType: EventType.CONTACT_UPDATED,
      }),
    );
    expect(privateUrl.code).toBe(Code.InvalidArgument);
    expect((await client.getSubscription({ owner, id: s.id })).subscription).toEqual(s);
  });

  it("deletes, after which the subscription is gone", async () => {
    const owner = newPair();
    const s = (
      await client.createSubscription({
        owner,
        targetUrl: "https://hooks.receiver.test/d",
        eventType: EventType.CONTACT_CREATED,
      })
    ).subscription!;
    expect((await listAll(owner)).map((x) => x.id)).toEqual([s.id]);
    await client.deleteSubscription({ owner, id: s.id }); // rejects on any error
    expect((await rpcError(client.getSubscription({ owner, id: s.id }))).code).toBe(Code.NotFound);
    expect((await rpcError(client.deleteSubscription({ owner, id: s.id }))).code).toBe(Code.NotFound);
    expect(await listAll(owner)).toHaveLength(0);
  });

  it("answers NOT_FOUND for another pair's subscription, whichever half differs", async () => {
    const owner = newPair();
    const s = (
      await client.createSubscription({
        owner,
        targetUrl: "https://hooks.receiver.test/mine",
        eventType: EventType.CONTACT_CREATED,
      })
    ).subscription!;
    const otherClient = { organisationId: owner.organisationId, clientId: `${owner.clientId}-x` } as Owner;
    const otherOrg = { organisationId: randomUUID(), clientId: owner.clientId } as Owner;
    for (const stranger of [otherClient, otherOrg]) {
      for (const call of [
        () => client.getSubscription({ owner: stranger, id: s.id }),
        () => client.updateSubscription({ owner: stranger, id: s.id, targetUrl: "https://other.receiver.test/stolen" }),
        () => client.deleteSubscription({ owner: stranger, id: s.id }),
      ]) {
        const err = await rpcError(call());
        expect(err.code).toBe(Code.NotFound);
        expect(err.rawMessage).toBe("subscription not found");
      }
      expect(await listAll(stranger)).toHaveLength(0);
    }
    expect((await client.getSubscription({ owner, id: s.id })).subscription).toEqual(s);
  });

  it("wants a positive id; an unknown one is NOT_FOUND", async () => {
    const owner = newPair();
    for (const id of [0n, -1n, -9223372036854775808n]) {
      for (const call of [
        () => client.getSubscription({ owner, id }),
        () => client.updateSubscription({ owner, id, eventType: EventType.CONTACT_CREATED }),
        () => client.deleteSubscription({ owner, id }),
      ]) {
        const err = await rpcError(call());
        expect(err.code).toBe(Code.InvalidArgument);
        expect(err.rawMessage).toBe("id: expected a positive integer");
      }
    }
    expect((await rpcError(client.getSubscription({ owner, id: 9223372036854775807n }))).code).toBe(Code.NotFound);
    expect((await rpcError(client.deleteSubscription({ owner, id: 9223372036854775807n }))).code).toBe(Code.NotFound);
  });
});

describe("IP classification", () => {
  it("classifies IPv4", () => {
    expect(classifyIp("8.8.8.8")).toBe("public");
    expect(classifyIp("172.32.0.1")).toBe("public");
    expect(classifyIp("100.128.0.1")).toBe("public");
    expect(classifyIp("127.0.0.1")).toBe("loopback");
    expect(classifyIp("127.255.255.254")).toBe("loopback");
    expect(classifyIp("10.255.0.1")).toBe("private");
    expect(classifyIp("172.31.255.255")).toBe("private");
    expect(classifyIp("192.168.1.1")).toBe("private");
    expect(classifyIp("169.254.169.254")).toBe("link-local");
    expect(classifyIp("100.64.0.1")).toBe("shared");
    expect(classifyIp("100.127.255.255")).toBe("shared");
    expect(classifyIp("0.0.0.0")).toBe("unspecified");
    expect(classifyIp("0.1.2.3")).toBe("unspecified");
    expect(classifyIp("224.0.0.251")).toBe("multicast");
    expect(classifyIp("239.255.255.250")).toBe("multicast");
    expect(classifyIp("255.255.255.255")).toBe("broadcast");
    expect(classifyIp("240.0.0.1")).toBe("reserved");
    expect(classifyIp("192.0.2.1")).toBe("documentation");
    expect(classifyIp("198.18.0.1")).toBe("reserved");
  });

  it("classifies IPv6", () => {
    expect(classifyIp("2606:4700:4700::1111")).toBe("public");
    expect(classifyIp("[2001:4860:4860::8888]")).toBe("public");
    expect(classifyIp("::")).toBe("unspecified");
    expect(classifyIp("::1")).toBe("loopback");
    expect(classifyIp("[::1]")).toBe("loopback");
    expect(classifyIp("fe80::1")).toBe("link-local");
    expect(classifyIp("febf:ffff::1")).toBe("link-local");
    expect(classifyIp("fe80::1%eth0")).toBe("link-local");
    expect(classifyIp("fc00::1")).toBe("unique-local");
    expect(classifyIp("fdff:ffff::1")).toBe("unique-local");
    expect(classifyIp("ff02::1")).toBe("multicast");
    expect(classifyIp("2001:db8::1")).toBe("documentation");
    expect(classifyIp("2001::1")).toBe("reserved"); // Teredo
    expect(classifyIp("fec0::1")).toBe("reserved");
    expect(classifyIp("100::1")).toBe("reserved");
    expect(classifyIp("4000::1")).toBe("reserved"); // outside global unicast 2000::/3
  });

  it("never treats an IPv4 destination hidden in IPv6 as public when it is not", () => {
    expect(classifyIp("::ffff:127.0.0.1")).toBe("ipv4-mapped");
    expect(classifyIp("::ffff:7f00:1")).toBe("ipv4-mapped");
    expect(classifyIp("::ffff:8.8.8.8")).toBe("ipv4-mapped");
    expect(classifyIp("::127.0.0.1")).toBe("reserved"); // IPv4-compatible, deprecated
    expect(classifyIp("64:ff9b::7f00:1")).toBe("loopback"); // NAT64
    expect(classifyIp("64:ff9b::10.0.0.1")).toBe("private");
    expect(classifyIp("64:ff9b::8.8.8.8")).toBe("public");
    expect(classifyIp("2002:a00:1::1")).toBe("private"); // 6to4 of 10.0.0.1
    expect(classifyIp("2002:808:808::1")).toBe("public");
  });

  it("refuses what is not an address", () => {
    expect(classifyIp("example.com")).toBe("invalid");
    expect(classifyIp("1.2.3.256")).toBe("invalid");
    expect(classifyIp("")).toBe("invalid");
    expect(isPublicIp("not-an-ip")).toBe(false);
    expect(isPublicIp("1.1.1.1")).toBe(true);
  });
});
