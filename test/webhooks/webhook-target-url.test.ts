// The target_url rules as a client of the webhook service meets them: every
// refusal with its reason and nothing written, the public destinations
// accepted, and what a deployment that allows insecure targets lets through.
// (The rules alone, without RPC or database: unit/target-url.test.ts.)
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { rpcError } from "../support/rpc.js";
import { client, devClient, listAll, newPair, resolved, useWebhookSuite } from "../support/webhook-suite.js";

useWebhookSuite();

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
    [
      `https://hooks.receiver.test/${"a".repeat(2049 - "https://hooks.receiver.test/".length)}`,
      /at most 2048 characters/,
    ],
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

  it("refuses what is not written as scheme://host rather than storing the URL parser's repair, in both deployments", async () => {
    const owner = newPair();
    for (const [targetUrl, reason] of [
      ["http:///x", /expected a host right after http:\/\//],
      ["https:///hooks.receiver.test/x", /expected a host right after https:\/\//],
      ["https:////hooks.receiver.test/x", /expected a host right after https:\/\//],
      ["http:/x.example/a", /expected \/\/ and a host right after http:/],
      ["https:/hooks.receiver.test/x", /expected \/\/ and a host right after https:/],
      ["https:hooks.receiver.test/x", /expected \/\/ and a host right after https:/],
      ["http:\\\\x.example\\a", /must not contain backslashes/],
      ["https:\\\\hooks.receiver.test/x", /must not contain backslashes/],
      ["https://hooks.receiver.test\\x", /must not contain backslashes/],
      ["https://@hooks.receiver.test/x", /user-info/],
    ] as const) {
      for (const c of [devClient, client]) {
        const err = await rpcError(c.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED }));
        expect(err.code, targetUrl).toBe(Code.InvalidArgument);
        expect(err.rawMessage, targetUrl).toMatch(/^target_url: /);
        expect(err.rawMessage, targetUrl).toMatch(reason);
      }
    }
    expect(await listAll(owner)).toHaveLength(0);
    // Written in full, the same URL passes where http is allowed, as it was sent.
    const res = await devClient.createSubscription({
      owner,
      targetUrl: "http://x.example:8080/a",
      eventType: EventType.CONTACT_CREATED,
    });
    expect(res.subscription!.targetUrl).toBe("http://x.example:8080/a");
    expect(await listAll(owner)).toHaveLength(1);
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
      expect(
        (await rpcError(devClient.createSubscription({ owner, targetUrl, eventType: EventType.CONTACT_CREATED })))
          .rawMessage,
      ).toMatch(reason);
    }
    // The strict deployment still refuses what the dev one stored.
    const stored = (await devClient.listSubscriptions({ owner })).subscriptions;
    expect(stored).toHaveLength(5);
    const err = await rpcError(
      client.updateSubscription({ owner, id: stored[0]!.id, targetUrl: stored[0]!.targetUrl }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
  });
});
