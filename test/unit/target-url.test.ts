// The target_url rules alone, without RPC, database or DNS (a stand-in
// resolver answers the one name they need): syntax, scheme, user-info,
// fragment, control characters, port, length, literal addresses, loopback
// names, and the URL that is stored. The same refusals through the webhook
// service: webhook-target-url.test.ts.
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { checkTargetUrl, type TargetUrlOptions } from "../../services/webhook/subscriptions/target-url.js";
import { rpcError } from "../support/rpc.js";

/** How names are resolved: what the webhook app passes (a c-ares resolver), here a stand-in. */
type Resolver = NonNullable<TargetUrlOptions["resolve"]>;

/** Public names only; every lookup is recorded. */
const looked: string[] = [];
const resolve: Resolver = async (hostname) => {
  looked.push(hostname);
  if (hostname === "hooks.receiver.test") return ["93.184.215.14"];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};
const HOST = "https://hooks.receiver.test/";

/** The INVALID_ARGUMENT a target_url is refused with. */
async function refusal(
  targetUrl: string,
  options: Parameters<typeof checkTargetUrl>[1] = { resolve },
): Promise<string> {
  const err = await rpcError(checkTargetUrl(targetUrl, options));
  expect(err.code, targetUrl).toBe(Code.InvalidArgument);
  expect(err.rawMessage, targetUrl).toMatch(/^target_url: /);
  return err.rawMessage;
}

/** A URL as a test's name: control characters escaped, a long one shortened. */
const shown = (url: string) => {
  const escaped = url.replace(
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return escaped.length > 60 ? `${escaped.slice(0, 40)}… (${url.length} characters)` : `"${escaped}"`;
};
const named = <T extends unknown[]>(rows: [string, ...T][]) =>
  rows.map(([url, ...rest]) => [shown(url), url, ...rest] as [string, string, ...T]);

describe("target_url rules that need no DNS", () => {
  it.each(
    named<[RegExp]>([
      ["", /^target_url: required$/],
      ["   ", /^target_url: required$/],
      ["/relative/path", /absolute URL/],
      ["hooks.receiver.test/no-scheme", /absolute URL/],
      ["ftp://hooks.receiver.test/", /expected an https URL/],
      ["http://hooks.receiver.test/", /must use https/],
      ["https://user:pw@hooks.receiver.test/", /user-info/],
      ["https://user@hooks.receiver.test/", /user-info/],
      ["https://hooks.receiver.test/#frag", /fragment/],
      [`${HOST}${"a".repeat(2049 - HOST.length)}`, /at most 2048 characters/],
    ]),
  )("refuses %s (syntax, scheme, user-info, fragment, length)", async (_name, targetUrl, reason) => {
    expect(await refusal(targetUrl)).toMatch(reason);
  });

  it.each(
    named<[]>([
      ["https://hooks.rece\tiver.test/"],
      ["https://hooks.receiver.test/a\nb"],
      ["\thttps://hooks.receiver.test/"],
      ["https://hooks.receiver.test/\r"],
      ["https://hooks.receiver.test/\u0000"],
      ["https://hooks.receiver.test/\u001f"],
      ["https://hooks.receiver.test/\u007f"],
      ["https://hooks.receiver.test/\u0085"],
      ["https://hooks.receiver.test/\u009f"],
    ]),
  )("refuses control characters rather than dropping them: %s", async (_name, targetUrl) => {
    expect(await refusal(targetUrl)).toMatch(/control characters/);
  });

  it.each(
    named<[RegExp]>([
      ["http:///x", /^target_url: expected a host right after http:\/\/ \(such as http:\/\/example\.com\/webhooks\)$/],
      ["https:///hooks.receiver.test/", /expected a host right after https:\/\//],
      ["https:////hooks.receiver.test/", /expected a host right after https:\/\//],
      ["https://?x", /expected a host right after https:\/\//],
      [
        "http:/x",
        /^target_url: expected \/\/ and a host right after http: \(such as http:\/\/example\.com\/webhooks\)$/,
      ],
      ["HTTPS:/hooks.receiver.test/", /expected \/\/ and a host right after https:/],
      ["https:hooks.receiver.test", /expected \/\/ and a host right after https:/],
      ["http:\\\\x", /must not contain backslashes/],
      ["https:\\\\hooks.receiver.test/", /must not contain backslashes/],
      ["https://hooks.receiver.test\\hook", /must not contain backslashes/],
      ["https://hooks.receiver.test/a?b=\\", /must not contain backslashes/],
      ["https://@hooks.receiver.test/", /user-info/],
      ["https://:@hooks.receiver.test/", /user-info/],
    ]),
  )("refuses %s rather than storing what the URL parser would repair it into", async (_name, targetUrl, reason) => {
    const before = looked.length;
    expect(await refusal(targetUrl)).toMatch(reason);
    expect(await refusal(targetUrl, { allowHttp: true, allowPrivate: true })).toMatch(reason);
    expect(looked.length).toBe(before);
  });

  it.each([[22], [25], [80], [442], [1023], [0]])("refuses port %i (the default, or 1024 and above)", async (port) => {
    expect(await refusal(`https://hooks.receiver.test:${port}/`)).toMatch(new RegExp(`port ${port} is not allowed`));
  });

  it.each([
    ["https://127.0.0.1/", /loopback address/],
    ["https://0x7f.1/", /loopback address/],
    ["https://2130706433/", /loopback address/],
    ["https://[::1]/", /loopback address/],
    ["https://10.1.2.3/", /private address/],
    ["https://192.168.0.10:8443/", /private address/],
    ["https://169.254.169.254/latest/meta-data", /link-local address/],
    ["https://[fd00::abcd]/", /unique-local/],
    ["https://100.64.0.1/", /carrier-grade NAT/],
    ["https://0.0.0.0/", /unspecified/],
    ["https://224.0.0.1/", /multicast/],
    ["https://255.255.255.255/", /broadcast/],
    ["https://[::ffff:127.0.0.1]/", /IPv4-mapped/],
    ["https://localhost/", /loopback name/],
    ["https://api.localhost:8443/", /loopback name/],
    ["https://LOCALHOST./", /loopback name/],
  ])("refuses the literal destination %s without a lookup", async (targetUrl, reason) => {
    const before = looked.length;
    expect(await refusal(targetUrl)).toMatch(reason);
    expect(looked.length).toBe(before);
  });

  it("accepts the default port, 1024 to 65535, public literal addresses, and exactly 2048 characters", async () => {
    const max = `${HOST}${"b".repeat(2048 - HOST.length)}`;
    for (const targetUrl of [
      "https://hooks.receiver.test/hooks",
      "https://hooks.receiver.test:1024/hooks",
      "https://hooks.receiver.test:65535/hooks",
      "https://8.8.8.8/hooks",
      "https://[2606:4700:4700::1111]:8443/hooks",
      max,
    ]) {
      expect(await checkTargetUrl(targetUrl, { resolve })).toBe(targetUrl);
    }
  });

  it("lets http and private destinations through when allowed, and still holds the other rules", async () => {
    const insecure = { allowHttp: true, allowPrivate: true };
    const before = looked.length;
    for (const targetUrl of [
      "http://localhost:3000/hook",
      "http://10.0.0.5/hook",
      "https://[::1]:8443/hook",
      "http://not-in-dns.example/hook",
    ]) {
      expect(await checkTargetUrl(targetUrl, insecure)).toBe(targetUrl);
    }
    expect(looked.length).toBe(before); // nothing to resolve when private destinations are allowed
    for (const [targetUrl, reason] of [
      ["ftp://localhost/", /https URL/],
      ["http://u:p@localhost/", /user-info/],
      ["http://localhost/#x", /fragment/],
      [`http://localhost/${"c".repeat(2048)}`, /at most 2048/],
      ["http://localhost/\u0000", /control characters/],
    ] as const) {
      expect(await refusal(targetUrl, insecure)).toMatch(reason);
    }
  });

  it("normalises the URL it stores", async () => {
    expect(await checkTargetUrl("  HTTPS://Hooks.Receiver.TEST:443/a/../b?q=1  ", { resolve })).toBe(
      "https://hooks.receiver.test/b?q=1",
    );
    expect(await checkTargetUrl("https://hooks.receiver.test", { resolve })).toBe("https://hooks.receiver.test/");
    expect(await checkTargetUrl("HTTP://X.Example:80/a", { allowHttp: true, allowPrivate: true })).toBe(
      "http://x.example/a",
    );
    expect(await checkTargetUrl("http://x.example:8080/a", { allowHttp: true, allowPrivate: true })).toBe(
      "http://x.example:8080/a",
    );
    // DNS that never answers is not "does not resolve": UNAVAILABLE, try again.
    const slow = await rpcError(
      checkTargetUrl("https://slow.receiver.test/", { resolve: () => new Promise(() => {}), resolveTimeoutMs: 50 }),
    );
    expect(slow.code).toBe(Code.Unavailable);
    expect(slow.rawMessage).toBe(
      "target_url: the host slow.receiver.test could not be resolved right now (DNS did not answer); try again later",
    );
    const servfail = await rpcError(
      checkTargetUrl("https://broken.receiver.test/", {
        resolve: async () => Promise.reject(Object.assign(new Error("queryA ESERVFAIL"), { code: "ESERVFAIL" })),
      }),
    );
    expect(servfail.code).toBe(Code.Unavailable);
  });
});
