// The webhook service's c-ares resolver (WEBHOOK_DNS_SERVERS) against a DNS
// server of this test on a loopback port, alone and through the target_url
// check. No database.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { caresResolver } from "../../services/shared/net/dns-resolver.js";
import { checkTargetUrl } from "../../services/webhook/subscriptions/target-url.js";
import { TestDnsServer } from "../support/dns-server.js";
import { rpcError } from "../support/rpc.js";

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
      const code = (p: Promise<unknown>) =>
        p.then(
          () => "resolved",
          (e: { code?: string }) => e.code,
        );
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
