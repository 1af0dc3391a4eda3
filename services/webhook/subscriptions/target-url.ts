// The rules a subscription's target_url must meet, and the IP classification
// behind them (pure, so the delivery service can re-check every resolved
// address right before it connects: DNS can change after create/update).
//
// A target_url is an absolute https URL of at most 2048 characters, without
// user-info and without a fragment. Its destination must be public: literal
// IPs are classified directly; a hostname is resolved and refused when ANY of
// its addresses is not public (an attacker controlling DNS could otherwise
// hand back a public and a private address and let the connect pick one).
// `localhost` and `*.localhost` are refused without asking DNS (RFC 6761).
//
// Fragments are REFUSED rather than stripped: a fragment is never sent over
// HTTP, so one in a target_url is a mistake the caller should see, and the
// stored URL stays exactly what was asked for (no silent rewriting besides
// the WHATWG normalisation: lower-cased scheme and host, default port dropped,
// IPv4 shorthands such as 0x7f.1 expanded to dotted quads).
//
// Development and tests turn on `allowPrivate` / `allowHttp`; then http and
// private destinations pass and hostnames are not resolved at all (container
// names and the like need not resolve where the API runs).
import { lookup } from "node:dns/promises";
import { isIP, isIPv4, isIPv6 } from "node:net";
import { invalid } from "../../shared/validation.js";
import pLimit from "p-limit";

export const TARGET_URL_MAX_LENGTH = 2048;

/** Where an address points. Everything but "public" is refused as a webhook destination. */
export type IpClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "shared"
  | "link-local"
  | "unique-local"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "reserved"
  | "ipv4-mapped"
  | "invalid";

/** Human wording for error messages: "points to a <label> address". */
export const IP_CLASS_LABELS: Record<IpClass, string> = {
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
};

type Range<N> = readonly [base: N, prefix: number, kind: IpClass];

function v4(dotted: string): number {
  return dotted.split(".").reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

// IANA IPv4 special-purpose registry, plus private-use and multicast. First match wins.
const IPV4_RANGES: Range<number>[] = [
  [v4("0.0.0.0"), 8, "unspecified"],
  [v4("10.0.0.0"), 8, "private"],
  [v4("100.64.0.0"), 10, "shared"],
  [v4("127.0.0.0"), 8, "loopback"],
  [v4("169.254.0.0"), 16, "link-local"],
  [v4("172.16.0.0"), 12, "private"],
  [v4("192.0.0.0"), 24, "reserved"],
  [v4("192.0.2.0"), 24, "documentation"],
  [v4("192.88.99.0"), 24, "reserved"],
  [v4("192.168.0.0"), 16, "private"],
  [v4("198.18.0.0"), 15, "reserved"],
  [v4("198.51.100.0"), 24, "documentation"],
  [v4("203.0.113.0"), 24, "documentation"],
  [v4("224.0.0.0"), 4, "multicast"],
  [v4("255.255.255.255"), 32, "broadcast"],
  [v4("240.0.0.0"), 4, "reserved"],
];

function classifyV4(value: number): IpClass {
  for (const [base, prefix, kind] of IPV4_RANGES) {
    const size = 2 ** (32 - prefix);
    if (value >= base && value < base + size) return kind;
  }
  return "public";
}

/** 8 groups of 16 bits as one 128-bit number; null if not IPv6 text. Zone ids (%eth0) are dropped by the caller. */
function parseV6(text: string): bigint | null {
  if (!isIPv6(text)) return null;
  let groups: string[];
  let head = text;
  const tail: string[] = [];
  const lastColon = text.lastIndexOf(":");
  const last = text.slice(lastColon + 1);
  if (last.includes(".")) {
    const n = v4(last);
    tail.push((n >>> 16).toString(16), (n & 0xffff).toString(16));
    head = text.slice(0, lastColon + 1);
    if (head.endsWith(":") && !head.endsWith("::")) head = head.slice(0, -1);
  }
  if (head.includes("::")) {
    const [left, right] = head.split("::") as [string, string];
    const l = left ? left.split(":") : [];
    const r = [...(right ? right.split(":") : []), ...tail];
    groups = [...l, ...Array<string>(8 - l.length - r.length).fill("0"), ...r];
  } else {
    groups = [...head.split(":"), ...tail];
  }
  if (groups.length !== 8) return null;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || "0", 16)), 0n);
}

const v6 = (text: string): bigint => parseV6(text)!;

const inV6 = (value: bigint, base: bigint, prefix: number): boolean =>
  value >> BigInt(128 - prefix) === base >> BigInt(128 - prefix);

/** The IPv4 address in the low 32 bits. */
const low32 = (value: bigint): number => Number(value & 0xffffffffn);

// IANA IPv6 special-purpose registry; anything outside 2000::/3 (global unicast) is not public.
const IPV6_RANGES: Range<bigint>[] = [
  [v6("::"), 128, "unspecified"],
  [v6("::1"), 128, "loopback"],
  [v6("::ffff:0:0"), 96, "ipv4-mapped"],
  [v6("::"), 96, "reserved"], // deprecated IPv4-compatible
  [v6("64:ff9b:1::"), 48, "reserved"], // local-use NAT64
  [v6("100::"), 64, "reserved"], // discard-only
  [v6("2001:db8::"), 32, "documentation"],
  [v6("2001::"), 23, "reserved"], // IETF protocol assignments, Teredo
  [v6("3fff::"), 20, "documentation"],
  [v6("fc00::"), 7, "unique-local"],
  [v6("fe80::"), 10, "link-local"],
  [v6("fec0::"), 10, "reserved"], // deprecated site-local
  [v6("ff00::"), 8, "multicast"],
];

function classifyV6(value: bigint): IpClass {
  // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 destination: judge that one.
  if (inV6(value, v6("64:ff9b::"), 96)) return classifyV4(low32(value));
  if (inV6(value, v6("2002::"), 16)) return classifyV4(Number((value >> 80n) & 0xffffffffn));
  for (const [base, prefix, kind] of IPV6_RANGES) {
    if (inV6(value, base, prefix)) return kind;
  }
  return inV6(value, v6("2000::"), 3) ? "public" : "reserved";
}

/**
 * Classifies an IP address (IPv4 dotted quad, or IPv6 text with or without
 * brackets and zone id). IPv4-mapped IPv6 (::ffff:a.b.c.d) is its own class
 * and never public: it is a way to reach an IPv4 destination while dodging
 * IPv4 rules, and no legitimate receiver needs it. A zone id means a scoped,
 * hence non-global, address.
 */
export function classifyIp(address: string): IpClass {
  let text = address.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (isIPv4(text)) return classifyV4(v4(text));
  const zone = text.indexOf("%");
  if (zone >= 0) {
    const kind = parseV6(text.slice(0, zone)) === null ? "invalid" : classifyV6(v6(text.slice(0, zone)));
    return kind === "public" ? "link-local" : kind;
  }
  const value = parseV6(text);
  return value === null ? "invalid" : classifyV6(value);
}

export const isPublicIp = (address: string): boolean => classifyIp(address) === "public";

/** Every address a hostname resolves to. */
export type Resolver = (hostname: string) => Promise<string[]>;

/**
 * getaddrinfo runs on libuv's small thread pool (shared with scrypt and file
 * I/O) and cannot be cancelled: at most this many lookups run at once, so
 * slow-resolving names sent by a client cannot starve logins.
 */
const limitedLookup = pLimit(2);

export const systemResolver: Resolver = (hostname) =>
  limitedLookup(async () => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address));

export interface TargetUrlOptions {
  /** Let private, loopback, link-local… destinations through (development, tests). */
  allowPrivate?: boolean;
  /** Let http:// through (development, tests). */
  allowHttp?: boolean;
  /** Defaults to the system resolver (getaddrinfo, like the delivery's connect). */
  resolve?: Resolver;
  resolveTimeoutMs?: number;
}

const FIELD = "target_url";

/** `localhost`, `*.localhost` (RFC 6761), with or without the trailing root dot. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost");
}

async function resolveWithin(resolve: Resolver, hostname: string, ms: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timeout")), ms);
  });
  try {
    return await Promise.race([resolve(hostname), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks a target_url; resolves to its normalised form (WHATWG href) or
 * throws INVALID_ARGUMENT "target_url: <reason>".
 */
export async function checkTargetUrl(value: string, options: TargetUrlOptions = {}): Promise<string> {
  const raw = value.trim();
  if (!raw) throw invalid(FIELD, "required");
  if (raw.length > TARGET_URL_MAX_LENGTH) throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(FIELD, "expected an absolute URL such as https://example.com/webhooks");
  }
  if (url.protocol === "http:") {
    if (!options.allowHttp) throw invalid(FIELD, "must use https (http is not allowed)");
  } else if (url.protocol !== "https:") {
    throw invalid(FIELD, "expected an https URL");
  }
  if (url.username || url.password) throw invalid(FIELD, "must not contain user-info (user:password@)");
  if (url.hash || raw.includes("#")) throw invalid(FIELD, "must not contain a fragment (#…): it is never sent to the server");
  if (!url.hostname) throw invalid(FIELD, "expected a host");
  if (url.port === "0") throw invalid(FIELD, "port 0 is not a valid destination");
  const href = url.href;
  if (href.length > TARGET_URL_MAX_LENGTH) throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters (once normalised)`);
  if (options.allowPrivate) return href;

  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) {
    const kind = classifyIp(host);
    if (kind !== "public") throw invalid(FIELD, `points to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);
    return href;
  }
  if (isLocalhostName(host)) throw invalid(FIELD, `${host} is a loopback name; only public destinations are allowed`);
  let addresses: string[];
  try {
    addresses = await resolveWithin(options.resolve ?? systemResolver, host, options.resolveTimeoutMs ?? 5000);
  } catch {
    throw invalid(FIELD, `host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw invalid(FIELD, `host ${host} does not resolve`);
  for (const address of addresses) {
    const kind = classifyIp(address);
    if (kind !== "public") {
      throw invalid(FIELD, `host ${host} resolves to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);
    }
  }
  return href;
}
