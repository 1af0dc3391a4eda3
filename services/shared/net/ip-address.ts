// Where an IP address points, for the destination checks at save time
// (services/webhook) and at connect time (services/delivery): one rule.
// Parsing and prefix matching are ipaddr.js's; the tables are the IANA
// special-purpose registries (RFC 6890 and its updates). node:net validates
// the text first: ipaddr.js also takes inet_aton shorthands ("127.1"), which
// no DNS answer or normalised URL host holds.
import ipaddr from "ipaddr.js";
import { isIPv4, isIPv6 } from "node:net";

/** Where an address points, in the wording of error messages ("is a <label> address"). */
export const IP_CLASS_LABELS = {
  public: "public",
  unspecified: "unspecified (0.0.0.0/8 or ::)",
  loopback: "loopback",
  private: "private",
  shared: "carrier-grade NAT (100.64.0.0/10)",
  "link-local": "link-local",
  "unique-local": "unique-local (fc00::/7)",
  multicast: "multicast",
  broadcast: "broadcast",
  documentation: "documentation-only",
  reserved: "reserved or special-purpose",
  "ipv4-mapped": "IPv4-mapped IPv6",
  invalid: "invalid",
} as const;

/** Everything but "public" is refused as a webhook destination. */
export type IpClass = keyof typeof IP_CLASS_LABELS;

type Range<A> = readonly [range: [A, number], kind: IpClass];

const v4 = (cidr: string, kind: IpClass): Range<ipaddr.IPv4> => [ipaddr.IPv4.parseCIDR(cidr), kind];
const v6 = (cidr: string, kind: IpClass): Range<ipaddr.IPv6> => [ipaddr.IPv6.parseCIDR(cidr), kind];

/** IANA IPv4 special-purpose registry, plus private-use and multicast. First match wins. */
const IPV4_RANGES: readonly Range<ipaddr.IPv4>[] = [
  v4("0.0.0.0/8", "unspecified"),
  v4("10.0.0.0/8", "private"),
  v4("100.64.0.0/10", "shared"),
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local"),
  v4("172.16.0.0/12", "private"),
  v4("192.0.0.0/24", "reserved"),
  v4("192.0.2.0/24", "documentation"),
  v4("192.88.99.0/24", "reserved"), // 6to4 relay anycast, deprecated
  v4("192.168.0.0/16", "private"),
  v4("198.18.0.0/15", "reserved"), // benchmarking
  v4("198.51.100.0/24", "documentation"),
  v4("203.0.113.0/24", "documentation"),
  v4("224.0.0.0/4", "multicast"),
  v4("255.255.255.255/32", "broadcast"),
  v4("240.0.0.0/4", "reserved"),
];

/** IANA IPv6 special-purpose registry. First match wins; outside 2000::/3 (global unicast) is not public. */
const IPV6_RANGES: readonly Range<ipaddr.IPv6>[] = [
  v6("::/128", "unspecified"),
  v6("::1/128", "loopback"),
  v6("::ffff:0:0/96", "ipv4-mapped"),
  v6("::/96", "reserved"), // IPv4-compatible, deprecated
  v6("64:ff9b:1::/48", "reserved"), // local-use NAT64
  v6("100::/64", "reserved"), // discard-only
  v6("2001:db8::/32", "documentation"),
  v6("2001::/23", "reserved"), // IETF protocol assignments, Teredo
  v6("3fff::/20", "documentation"),
  v6("fc00::/7", "unique-local"),
  v6("fe80::/10", "link-local"),
  v6("fec0::/10", "reserved"), // site-local, deprecated
  v6("ff00::/8", "multicast"),
];

const NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96");
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR("2002::/16");
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR("2000::/3");

function classifyV4(address: ipaddr.IPv4): IpClass {
  return IPV4_RANGES.find(([range]) => address.match(range))?.[1] ?? "public";
}

const embeddedV4 = (parts: number[], at: number) =>
  new ipaddr.IPv4([parts[at]! >> 8, parts[at]! & 0xff, parts[at + 1]! >> 8, parts[at + 1]! & 0xff]);

function classifyV6(address: ipaddr.IPv6): IpClass {
  // NAT64 (RFC 6052) and 6to4 (RFC 3056) carry the IPv4 destination a gateway forwards to: that one is judged.
  if (address.match(NAT64)) return classifyV4(embeddedV4(address.parts, 6));
  if (address.match(SIX_TO_FOUR)) return classifyV4(embeddedV4(address.parts, 1));
  return (
    IPV6_RANGES.find(([range]) => address.match(range))?.[1] ?? (address.match(GLOBAL_UNICAST) ? "public" : "reserved")
  );
}

/** IPv6 text's trailing dotted quad as hex groups: ipaddr.js reads "::a.b.c.d" as "::ffff:a.b.c.d". */
const hexTail = (text: string) =>
  text.replace(
    /(\d+)\.(\d+)\.(\d+)\.(\d+)$/,
    (_, a: string, b: string, c: string, d: string) =>
      `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );

/**
 * Classifies an IP address (IPv6 with or without brackets and zone id).
 * IPv4-mapped IPv6 is never public: it reaches an IPv4 destination dodging
 * IPv4 rules. A zone id means a scoped, hence non-global, address.
 */
export function classifyIp(address: string): IpClass {
  let text = address.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (isIPv4(text)) return classifyV4(ipaddr.IPv4.parse(text));
  const zone = text.indexOf("%");
  const bare = zone >= 0 ? text.slice(0, zone) : text;
  if (!isIPv6(bare)) return "invalid";
  const kind = classifyV6(ipaddr.IPv6.parse(hexTail(bare)));
  return zone >= 0 && kind === "public" ? "link-local" : kind;
}

export const isPublicIp = (address: string): boolean => classifyIp(address) === "public";

/** Why an address is refused as a destination ("<address> is a loopback address"), or undefined when it is public. */
export function ipRefusal(address: string): string | undefined {
  const kind = classifyIp(address);
  return kind === "public" ? undefined : `${address} is a ${IP_CLASS_LABELS[kind]} address`;
}
