// The webhook service over real RPC: subscriptions of a pair (organisation,
// client application), the target_url rules, the subscribers the delivery
// service asks for, and the pair-wide delete a revoked grant triggers.
import { randomUUID } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType } from "../gen/bizcard/events/v1/events_pb.js";
import { WebhookService, type Owner } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { ConfigError, loadConfig } from "../services/shared/config.js";
import { caresResolver } from "../services/shared/net/dns-resolver.js";
import type { Resolver } from "../services/shared/net/dns-resolver.js";
import { classifyIp, isPublicIp } from "../services/shared/net/ip-address.js";
import { checkTargetUrl } from "../services/webhook/subscriptions/target-url.js";
import { createWebhookApp } from "../services/webhook/webhook-app.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./support/backends.js";
import { TestDnsServer } from "./support/dns-server.js";
import { waitFor } from "./support/processes.js";
import { rpcError } from "./support/rpc.js";
import { openTestBus, startService, type StartedService } from "./support/services.js";

const TOKEN = "t".repeat(40);
const EVENT_TYPE_ERROR = "event_type: expected contact.created or contact.updated";

// Stands in for DNS: names under receiver.test answer what each test needs.
const DNS: Record<string, string[]> = {
  "hooks.receiver.test": ["93.184.215.14"],
  "other.receiver.test": ["93.184.215.15"],
  "v6.receiver.test": ["2606:4700:4700::1111", "1.1.1.1"],
  "internal.receiver.test": ["10.0.0.7"],
  "metadata.receiver.test": ["169.254.169.254"],
  "ula.receiver.test": ["fd00::1"],
  "mapped.receiver.test": ["::ffff:127.0.0.1"],
  "rebind.receiver.test": ["93.184.215.14", "127.0.0.1"],
  "empty.receiver.test": [],
};
const resolved: string[] = [];
const resolve: Resolver = async (hostname) => {
  resolved.push(hostname);
  const addresses = DNS[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return addresses;
};

const strictConfig = testConfig({ INTERNAL_RPC_TOKEN: TOKEN, WEBHOOK_ALLOW_INSECURE_TARGETS: "false" });
const devConfig = testConfig({ INTERNAL_RPC_TOKEN: TOKEN, WEBHOOK_ALLOW_INSECURE_TARGETS: "true" });

let db: TestDatabase;
let bus: EventBus;
let strict: StartedService<ServiceApp>;
let dev: StartedService<ServiceApp>;
let client: ReturnType<typeof strict.client<typeof WebhookService>>;
let devClient: ReturnType<typeof dev.client<typeof WebhookService>>;

beforeAll(async () => {
  db = await createTestDatabase();
  bus = await openTestBus(strictConfig);
  // One grant.revoked consumer is enough (the in-process bus, when NATS is absent, takes one per name).
  strict = await startService((deps) => createWebhookApp(deps, { resolve, consumeGrantRevoked: false }), { config: strictConfig, db, bus });
  dev = await startService((deps) => createWebhookApp(deps, { resolve }), { config: devConfig, db, bus });
  client = strict.client(WebhookService);
  devClient = dev.client(WebhookService);
});

afterAll(async () => {
  await dev?.stop();
  await strict?.stop();
  await bus?.close();
  await db?.drop();
});

const newPair = (clientId = `client-${randomUUID().slice(0, 8)}`): Owner =>
  ({ organisationId: randomUUID(), clientId }) as Owner;

async function listAll(owner: Owner) {
  return (await client.listSubscriptions({ owner, pageSize: 100 })).subscriptions;
}

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
    const first = await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/a", eventType: EventType.CONTACT_UPDATED });
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
    const otherType = await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/a", eventType: EventType.CONTACT_CREATED });
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
        client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/race", eventType: EventType.CONTACT_CREATED }),
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
    const badOrg = await rpcError(client.createSubscription({ ...body, owner: { organisationId: "nope", clientId: "c" } }));
    expect(badOrg.rawMessage).toBe("owner.organisation_id: expected a UUID");
    const noClient = await rpcError(client.createSubscription({ ...body, owner: { organisationId: randomUUID(), clientId: "" } }));
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
      const err = await rpcError(client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/e", eventType }));
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
    const moved = (await client.updateSubscription({ owner, id: s!.id, targetUrl: "https://other.receiver.test/two" })).subscription!;
    expect(moved.id).toBe(s!.id);
    expect(moved.targetUrl).toBe("https://other.receiver.test/two");
    expect(moved.eventType).toBe(EventType.CONTACT_CREATED);
    expect(moved.createTime).toEqual(s!.createTime);
    expect(timestampDate(moved.updateTime!).getTime()).toBeGreaterThan(timestampDate(s!.updateTime!).getTime());

    const retyped = (await client.updateSubscription({ owner, id: s!.id, eventType: EventType.CONTACT_UPDATED })).subscription!;
    expect(retyped.targetUrl).toBe("https://other.receiver.test/two");
    expect(retyped.eventType).toBe(EventType.CONTACT_UPDATED);

    // Nothing set: nothing changes.
    const same = (await client.updateSubscription({ owner, id: s!.id })).subscription!;
    expect(same).toEqual(retyped);
    expect((await client.getSubscription({ owner, id: s!.id })).subscription).toEqual(retyped);
  });

  it("refuses an update that would duplicate another subscription of the pair", async () => {
    const owner = newPair();
    const a = (await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/dup", eventType: EventType.CONTACT_CREATED })).subscription!;
    const b = (await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/dup", eventType: EventType.CONTACT_UPDATED })).subscription!;
    const err = await rpcError(client.updateSubscription({ owner, id: b.id, eventType: EventType.CONTACT_CREATED }));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe(`a subscription with this target_url and event_type already exists (id ${a.id})`);
    expect((await client.getSubscription({ owner, id: b.id })).subscription).toEqual(b);
  });

  it("checks event_type and target_url on update and changes nothing when refused", async () => {
    const owner = newPair();
    const s = (await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/u", eventType: EventType.CONTACT_CREATED })).subscription!;
    const badType = await rpcError(client.updateSubscription({ owner, id: s.id, eventType: EventType.UNSPECIFIED }));
    expect(badType.code).toBe(Code.InvalidArgument);
    expect(badType.rawMessage).toBe(EVENT_TYPE_ERROR);
    const unknownType = await rpcError(client.updateSubscription({ owner, id: s.id, eventType: 7 as EventType }));
    expect(unknownType.rawMessage).toBe(EVENT_TYPE_ERROR);
    const badUrl = await rpcError(client.updateSubscription({ owner, id: s.id, targetUrl: "http://hooks.receiver.test/u" }));
    expect(badUrl.code).toBe(Code.InvalidArgument);
    expect(badUrl.rawMessage).toMatch(/^target_url: /);
    const privateUrl = await rpcError(
      client.updateSubscription({ owner, id: s.id, targetUrl: "https://internal.receiver.test/", eventType: EventType.CONTACT_UPDATED }),
    );
    expect(privateUrl.code).toBe(Code.InvalidArgument);
    expect((await client.getSubscription({ owner, id: s.id })).subscription).toEqual(s);
  });

  it("deletes, after which the subscription is gone", async () => {
    const owner = newPair();
    const s = (await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/d", eventType: EventType.CONTACT_CREATED })).subscription!;
    expect((await listAll(owner)).map((x) => x.id)).toEqual([s.id]);
    await client.deleteSubscription({ owner, id: s.id }); // rejects on any error
    expect((await rpcError(client.getSubscription({ owner, id: s.id }))).code).toBe(Code.NotFound);
    expect((await rpcError(client.deleteSubscription({ owner, id: s.id }))).code).toBe(Code.NotFound);
    expect(await listAll(owner)).toHaveLength(0);
  });

  it("answers NOT_FOUND for another pair's subscription, whichever half differs", async () => {
    const owner = newPair();
    const s = (await client.createSubscription({ owner, targetUrl: "https://hooks.receiver.test/mine", eventType: EventType.CONTACT_CREATED })).subscription!;
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

describe("target_url", () => {
  const refusals: [url: string, reason: RegExp][] = [
    ["", /^target_url: required$/],
    ["/relative/path", /absolute URL/],
    ["hooks.receiver.test/no-scheme", /absolute URL/],
    ["ftp://hooks.receiver.test/", /expected an https URL/],
    ["http://hooks.receiver.test/", /must use https/],
    ["https://user:pw@hooks.receiver.test/", /user-info/],
    ["https://user@hooks.receiver.test/", /user-info/],
    ["https://hooks.receiver.test/#frag", /fragment/],
    [`https://hooks.receiver.test/${"a".repeat(2049 - "https://hooks.receiver.test/".length)}`, /at most 2048 characters/],
    ["https://127.0.0.1/", /loopback address/],
    ["https://0x7f.1/", /loopback address/],
    ["https://2130706433/", /loopback address/],
    ["https://[::1]/", /loopback address/],
    ["https://10.1.2.3/", /private address/],
    ["https://192.168.0.10:8443/", /private address/],
    ["https://172.16.5.4/", /private address/],
    ["https://169.254.169.254/latest/meta-data", /link-local address/],
    ["https://[fe80::1]/", /link-local address/],
    ["https://[fd00::abcd]/", /unique-local/],
    ["https://100.64.0.1/", /carrier-grade NAT/],
    ["https://0.0.0.0/", /unspecified/],
    ["https://224.0.0.1/", /multicast/],
    ["https://255.255.255.255/", /broadcast/],
    ["https://[::ffff:127.0.0.1]/", /IPv4-mapped/],
    ["https://localhost/", /loopback name/],
    ["https://api.localhost:8443/", /loopback name/],
    ["https://internal.receiver.test/", /host internal\.receiver\.test resolves to a private address/],
    ["https://metadata.receiver.test/", /resolves to a link-local address/],
    ["https://ula.receiver.test/", /resolves to a unique-local/],
    ["https://mapped.receiver.test/", /resolves to a IPv4-mapped IPv6 address/],
    ["https://rebind.receiver.test/", /resolves to a loopback address/],
    ["https://nowhere.receiver.test/", /host nowhere\.receiver\.test does not resolve/],
    // Control characters are refused, never dropped (the URL parser would store exa\tmple as example).
    ["https://hooks.rece\tiver.test/", /control characters/],
    ["https://hooks.receiver.test/a\nb", /control characters/],
    ["\thttps://hooks.receiver.test/", /control characters/],
    ["https://hooks.receiver.test/\u0000", /control characters/],
    ["https://hooks.receiver.test/\u007f", /control characters/],
    ["https://hooks.receiver.test/\u0085", /control characters/],
    // Ports: the default, or 1024 and above.
    ["https://hooks.receiver.test:22/", /port 22 is not allowed/],
    ["https://hooks.receiver.test:25/", /port 25 is not allowed/],
    ["https://hooks.receiver.test:80/", /port 80 is not allowed/],
    ["https://hooks.receiver.test:1023/", /port 1023 is not allowed/],
    ["https://hooks.receiver.test:0/", /port 0 is not allowed/],
    ["https://empty.receiver.test/", /does not resolve/],
  ];

  it("refuses each bad target_url with its reason and writes nothing", async () => {
    const owner = newPair();
    for (const [targetUrl, reason] of refusals) {
      const err = await rpcError(client.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED }));
      expect(err.code, targetUrl).toBe(Code.InvalidArgument);
      expect(err.rawMessage, targetUrl).toMatch(/^target_url: /);
      expect(err.rawMessage, targetUrl).toMatch(reason);
    }
    expect(await listAll(owner)).toHaveLength(0);
  });

  it("accepts public destinations, as names or literal addresses", async () => {
    const owner = newPair();
    const max = `https://hooks.receiver.test/${"b".repeat(2048 - "https://hooks.receiver.test/".length)}`;
    for (const targetUrl of [
      "https://v6.receiver.test/hooks",
      "https://8.8.8.8/hooks",
      "https://[2606:4700:4700::1111]:8443/hooks",
      "https://hooks.receiver.test:1024/hooks",
      "https://hooks.receiver.test:65535/hooks",
      max,
    ]) {
      const res = await client.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_UPDATED });
      expect(res.created, targetUrl).toBe(true);
      expect(res.subscription!.targetUrl).toBe(targetUrl);
    }
    expect(await listAll(owner)).toHaveLength(6);
  });

  it("lets http and private destinations through when the deployment allows insecure targets", async () => {
    const owner = newPair();
    const before = resolved.length;
    for (const targetUrl of [
      "http://localhost:3000/hook",
      "http://10.0.0.5/hook",
      "https://[::1]:8443/hook",
      "http://internal.receiver.test/hook",
      "http://not-in-dns.example/hook",
    ]) {
      const res = await devClient.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED });
      expect(res.created, targetUrl).toBe(true);
    }
    expect(resolved.length).toBe(before); // nothing to resolve when private destinations are allowed
    // The rest of the rules still hold.
    for (const [targetUrl, reason] of [
      ["ftp://localhost/", /https URL/],
      ["http://u:p@localhost/", /user-info/],
      ["http://localhost/#x", /fragment/],
      [`http://localhost/${"c".repeat(2048)}`, /at most 2048/],
    ] as const) {
      expect((await rpcError(devClient.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED }))).rawMessage).toMatch(reason);
    }
    // The strict deployment still refuses what the dev one stored.
    const stored = (await devClient.listSubscriptions({ owner })).subscriptions;
    expect(stored).toHaveLength(5);
    const err = await rpcError(client.updateSubscription({ owner, id: stored[0]!.id, targetUrl: stored[0]!.targetUrl }));
    expect(err.code).toBe(Code.InvalidArgument);
  });

  it("normalises the URL it stores", async () => {
    expect(await checkTargetUrl("  HTTPS://Hooks.Receiver.TEST:443/a/../b?q=1  ", { resolve })).toBe("https://hooks.receiver.test/b?q=1");
    expect(await checkTargetUrl("https://hooks.receiver.test", { resolve })).toBe("https://hooks.receiver.test/");
    // DNS that never answers is not "does not resolve": UNAVAILABLE, try again.
    const slow = await rpcError(checkTargetUrl("https://slow.receiver.test/", { resolve: () => new Promise(() => {}), resolveTimeoutMs: 50 }));
    expect(slow.code).toBe(Code.Unavailable);
    expect(slow.rawMessage).toBe("target_url: the host slow.receiver.test could not be resolved right now (DNS did not answer); try again later");
    const servfail = await rpcError(
      checkTargetUrl("https://broken.receiver.test/", { resolve: async () => Promise.reject(Object.assign(new Error("queryA ESERVFAIL"), { code: "ESERVFAIL" })) }),
    );
    expect(servfail.code).toBe(Code.Unavailable);
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

describe("lists", () => {
  it("lists a pair's subscriptions newest first and pages with a token", async () => {
    const owner = newPair();
    const ids: bigint[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await client.createSubscription({ owner, targetUrl: `https://hooks.receiver.test/p${i}`, eventType: EventType.CONTACT_CREATED });
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
    expect(first.subscriptions.map((s) => s.targetUrl)).toEqual(["https://hooks.receiver.test/p4", "https://hooks.receiver.test/p3"]);
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
    for (const pageToken of ["garbage", Buffer.from(JSON.stringify(["0"])).toString("base64url"), Buffer.from("[1]").toString("base64url"), Buffer.from('["99999999999999999999"]').toString("base64url")]) {
      expect((await rpcError(client.listSubscriptions({ owner, pageToken }))).rawMessage).toBe("page_token: not a token this service issued");
    }
  });

  it("lists an organisation's subscribers of one event type across clients, with their secrets", async () => {
    const org = randomUUID();
    const a = await client.createSubscription({ owner: { organisationId: org, clientId: "app-a" } as Owner, targetUrl: "https://hooks.receiver.test/a", eventType: EventType.CONTACT_CREATED });
    const b = await client.createSubscription({ owner: { organisationId: org, clientId: "app-b" } as Owner, targetUrl: "https://other.receiver.test/b", eventType: EventType.CONTACT_CREATED });
    const c = await client.createSubscription({ owner: { organisationId: org, clientId: "app-c" } as Owner, targetUrl: "https://hooks.receiver.test/c", eventType: EventType.CONTACT_UPDATED });
    await client.createSubscription({ owner: { organisationId: randomUUID(), clientId: "app-a" } as Owner, targetUrl: "https://hooks.receiver.test/a", eventType: EventType.CONTACT_CREATED });

    const created = await client.listSubscribers({ organisationId: org, eventType: EventType.CONTACT_CREATED });
    expect(created.subscribers.map((s) => ({ id: s.subscriptionId, clientId: s.clientId, targetUrl: s.targetUrl, secret: s.secret }))).toEqual([
      { id: a.subscription!.id, clientId: "app-a", targetUrl: "https://hooks.receiver.test/a", secret: a.secret },
      { id: b.subscription!.id, clientId: "app-b", targetUrl: "https://other.receiver.test/b", secret: b.secret },
    ]);
    const updated = await client.listSubscribers({ organisationId: org.toUpperCase(), eventType: EventType.CONTACT_UPDATED });
    expect(updated.subscribers.map((s) => [s.subscriptionId, s.clientId, s.secret])).toEqual([[c.subscription!.id, "app-c", c.secret]]);
    expect((await client.listSubscribers({ organisationId: randomUUID(), eventType: EventType.CONTACT_CREATED })).subscribers).toEqual([]);

    expect((await rpcError(client.listSubscribers({ organisationId: org, eventType: EventType.UNSPECIFIED }))).rawMessage).toBe(EVENT_TYPE_ERROR);
    expect((await rpcError(client.listSubscribers({ organisationId: "x", eventType: EventType.CONTACT_CREATED }))).rawMessage).toBe(
      "organisation_id: expected a UUID",
    );
  });
});

describe("pair-wide delete", () => {
  it("deletes every subscription of the pair and nothing else", async () => {
    const owner = newPair("app-revoked");
    const sameOrgOtherClient = { organisationId: owner.organisationId, clientId: "app-kept" } as Owner;
    const otherOrgSameClient = { organisationId: randomUUID(), clientId: owner.clientId } as Owner;
    for (const [i, eventType] of [EventType.CONTACT_CREATED, EventType.CONTACT_UPDATED, EventType.CONTACT_CREATED].entries()) {
      await client.createSubscription({ owner, targetUrl: `https://hooks.receiver.test/r${i}`, eventType });
    }
    const kept1 = await client.createSubscription({ owner: sameOrgOtherClient, targetUrl: "https://hooks.receiver.test/k", eventType: EventType.CONTACT_CREATED });
    const kept2 = await client.createSubscription({ owner: otherOrgSameClient, targetUrl: "https://hooks.receiver.test/k", eventType: EventType.CONTACT_CREATED });

    expect((await client.deletePairSubscriptions({ owner })).deletedCount).toBe(3);
    expect(await listAll(owner)).toHaveLength(0);
    expect((await client.listSubscribers({ organisationId: owner.organisationId, eventType: EventType.CONTACT_CREATED })).subscribers.map((s) => s.clientId)).toEqual([
      "app-kept",
    ]);
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
    const err = await rpcError(anonymous.listSubscribers({ organisationId: randomUUID(), eventType: EventType.CONTACT_CREATED }));
    expect(err.code).toBe(Code.Unauthenticated);
  });
});

describe("the c-ares resolver (against a DNS server of this test)", () => {
  it("answers A and AAAA; tells a name without address (ENOTFOUND/ENODATA) from DNS that fails or stays silent", async () => {
    const dns = await TestDnsServer.start({
      "both.test": { A: ["93.184.215.14"], AAAA: ["2606:4700:4700::1111"] },
      "v4.test": { A: ["93.184.215.15"] },
      "none.test": {},
      "silent.test": "drop",
      "broken.test": "servfail",
    });
    try {
      const resolve = caresResolver({ timeoutMs: 300, servers: [dns.address] });
      expect((await resolve("both.test")).sort()).toEqual(["2606:4700:4700::1111", "93.184.215.14"]);
      expect(await resolve("v4.test")).toEqual(["93.184.215.15"]);
      const code = (p: Promise<unknown>) => p.then(() => "resolved", (e: { code?: string }) => e.code);
      expect(await code(resolve("missing.test"))).toBe("ENOTFOUND");
      expect(await code(resolve("none.test"))).toBe("ENODATA");
      expect(await code(resolve("broken.test"))).toBe("ESERVFAIL");
      expect(await code(resolve("silent.test"))).toBe("ETIMEOUT");
      expect(dns.asked).toEqual(expect.arrayContaining(["both.test/A", "both.test/AAAA"]));

      // Through the target check: no address is the caller's 400, silence and failure are UNAVAILABLE.
      const check = (url: string) => rpcError(checkTargetUrl(url, { resolve, resolveTimeoutMs: 2000 }));
      expect((await check("https://missing.test/")).rawMessage).toBe("target_url: host missing.test does not resolve");
      expect((await check("https://none.test/")).rawMessage).toBe("target_url: host none.test does not resolve");
      expect((await check("https://broken.test/")).code).toBe(Code.Unavailable);
      expect((await check("https://silent.test/")).code).toBe(Code.Unavailable);
      // Silence costs its own timeout only: many silent names at once do not delay a good one.
      let silentSettled = false;
      const silent = Promise.all(Array.from({ length: 20 }, () => code(resolve("silent.test"))));
      void silent.then(() => (silentSettled = true));
      expect(await checkTargetUrl("https://v4.test/hook", { resolve })).toBe("https://v4.test/hook");
      expect(silentSettled).toBe(false);
      expect(await silent).toEqual(Array(20).fill("ETIMEOUT"));
    } finally {
      await dns.close();
    }
  });
});

describe("configuration", () => {
  it("has the documented defaults and reads the DNS servers", () => {
    const c = loadConfig({});
    expect(c.WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR).toBe(100);
    expect(c.WEBHOOK_DNS_TIMEOUT_MS).toBe(3000);
    expect(c.WEBHOOK_DNS_SERVERS).toEqual([]);
    expect(loadConfig({ WEBHOOK_DNS_SERVERS: "1.1.1.1, 8.8.8.8:53,[2606:4700:4700::1111]:5353,::1" }).WEBHOOK_DNS_SERVERS).toEqual([
      "1.1.1.1",
      "8.8.8.8:53",
      "[2606:4700:4700::1111]:5353",
      "::1",
    ]);
  });

  it.each([
    ["WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR", "0"],
    ["WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR", "lots"],
    ["WEBHOOK_DNS_TIMEOUT_MS", "10"],
    ["WEBHOOK_DNS_SERVERS", "dns.google"],
    ["WEBHOOK_DNS_SERVERS", "1.1.1.1:0"],
    ["WEBHOOK_DNS_SERVERS", "1.1.1.1:99999"],
    ["WEBHOOK_DNS_SERVERS", "[1.1.1.1]:53"],
  ])("refuses %s=%s naming the variable", (variable, value) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
  });
});
