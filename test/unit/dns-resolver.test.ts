// The webhook targets' resolver (services/shared/net/dns-resolver.ts), which
// the save-time check and the delivery's connect both use: it asks the
// configured servers (here a DNS server of this test, on loopback), and with
// insecure targets allowed, the system's resolver for localhost names.
import { afterAll, beforeAll, expect, it } from "vitest";
import { isLocalhostName, targetResolver } from "../../services/shared/net/dns-resolver.js";
import { TestDnsServer } from "../support/dns-server.js";

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await TestDnsServer.start({
    "receiver.dns-only.test": { A: ["127.0.0.1"], AAAA: ["::1"] },
    "public.dns-only.test": { A: ["93.184.215.14"] },
  });
});
afterAll(() => dns?.close());

const code = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: { code?: string }) => e.code,
  );

it("asks the configured servers, secure or not", async () => {
  for (const allowInsecure of [false, true]) {
    const resolve = targetResolver({ timeoutMs: 1000, servers: [dns.address], allowInsecure });
    expect((await resolve("receiver.dns-only.test")).sort()).toEqual(["127.0.0.1", "::1"]);
    expect(await resolve("public.dns-only.test")).toEqual(["93.184.215.14"]);
  }
  expect(dns.asked).toEqual(
    expect.arrayContaining(["receiver.dns-only.test/A", "receiver.dns-only.test/AAAA", "public.dns-only.test/A"]),
  );
});

it("with insecure targets, localhost names go to the system's resolver and never to the DNS servers", async () => {
  const before = dns.asked.length;
  const insecure = targetResolver({ timeoutMs: 1000, servers: [dns.address], allowInsecure: true });
  expect(await insecure("localhost")).toEqual(expect.arrayContaining([expect.stringMatching(/^(127\.0\.0\.1|::1)$/)]));
  expect(dns.asked.slice(before)).toEqual([]);
  // Secure: nothing special, the servers answer (this one has no such name); the target check refuses localhost names before any lookup anyway.
  const secure = targetResolver({ timeoutMs: 1000, servers: [dns.address], allowInsecure: false });
  expect(await code(secure("localhost"))).toBe("ENOTFOUND");
  expect(dns.asked.slice(before)).toContain("localhost/A");
});

it("knows the localhost names of RFC 6761", () => {
  for (const name of ["localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.localhost."])
    expect(isLocalhostName(name)).toBe(true);
  for (const name of ["localhost.example", "mylocalhost", "localhost-1", "example.com"])
    expect(isLocalhostName(name)).toBe(false);
});
