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
//
// Control characters (C0, DEL, C1) anywhere in the URL are refused: the WHATWG
// parser would silently drop tabs and newlines ("exa\tmple.com" becomes
// "example.com"), so what is stored would not be what was sent.
//
// Ports (decided, docs/interface.md): the scheme's default (443, or 80 for
// http where http is allowed) or any port from 1024 to 65535. The other
// well-known ports (22 SSH, 25 SMTP, 53 DNS, ...) are system services, never
// webhook receivers; self-hosted receivers (n8n on 5678, 8443, 8080) live
// above 1023. The rule holds in development too.
//
// DNS: a name that does not exist or has no address is the caller's mistake
// (INVALID_ARGUMENT, "does not resolve"); DNS that fails or does not answer in
// time is ours (UNAVAILABLE, with a TargetUnavailable detail the gateway
// shows as a 503): the name may be fine, try again.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isIP, isIPv4, isIPv6 } from "node:net";
import { TargetUnavailableSchema } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { invalid } from "../../shared/validation.js";
import { NO_ADDRESS_CODES } from "./dns-resolver.js";

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

/** Every address a hostname resolves to (rejects with a node:dns error code when it cannot). */
export type Resolver = (hostname: string) => Promise<string[]>;

export interface TargetUrlOptions {
  /** Let private, loopback, link-local… destinations through (development, tests). */
  allowPrivate?: boolean;
  /** Let http:// through (development, tests). */
  allowHttp?: boolean;
  /** How names are resolved (the webhook app passes a c-ares resolver, dns-resolver.ts); required unless allowPrivate. */
  resolve?: Resolver;
  /** The most a lookup may take before the check is UNAVAILABLE (default 5 s). */
  resolveTimeoutMs?: number;
}

const FIELD = "target_url";

/** Ports a target may use besides the scheme's default: the unprivileged range. */
export const TARGET_PORT_MIN = 1024;

/** C0 controls, DEL and C1 controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** `localhost`, `*.localhost` (RFC 6761), with or without the trailing root dot. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost");
}

/** UNAVAILABLE for a lookup that failed; the detail is what the client is told. */
export function targetUnavailable(host: string, cause: unknown): ConnectError {
  const description = `target_url: the host ${host} could not be resolved right now (DNS did not answer); try again later`;
  return new ConnectError(description, Code.Unavailable, undefined, [{ desc: TargetUnavailableSchema, value: create(TargetUnavailableSchema, { description }) }], cause);
}

async function resolveWithin(resolve: Resolver, hostname: string, ms: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`DNS lookup of ${hostname} took over ${ms} ms`), { code: "ETIMEOUT" })), ms);
  });
  try {
    return await Promise.race([resolve(hostname), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A target_url that passed every rule that needs no DNS. */
export interface ParsedTargetUrl {
  /** The normalised URL (WHATWG href): what is stored. */
  href: string;
  /** The hostname to resolve, or undefined when nothing is left to check (a literal IP, or private destinations allowed). */
  resolveHost?: string;
}

/**
 * The rules that need no DNS: syntax, scheme, user-info, fragment, control
 * characters, port, length, and literal IP destinations. Throws
 * INVALID_ARGUMENT "target_url: <reason>".
 */
export function parseTargetUrl(value: string, options: Omit<TargetUrlOptions, "resolve" | "resolveTimeoutMs"> = {}): ParsedTargetUrl {
  if (CONTROL.test(value)) throw invalid(FIELD, "must not contain control characters (tabs, newlines, ...)");
  // Spaces around the URL are dropped (a paste); inside it, the URL parser refuses or encodes them.
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
  // url.port is "" for the scheme's default port (443, or 80 for http).
  if (url.port !== "" && Number(url.port) < TARGET_PORT_MIN) {
    throw invalid(FIELD, `port ${url.port} is not allowed; use the default port or one from ${TARGET_PORT_MIN} to 65535`);
  }
  const href = url.href;
  if (href.length > TARGET_URL_MAX_LENGTH) throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters (once normalised)`);
  if (options.allowPrivate) return { href };

  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) {
    const kind = classifyIp(host);
    if (kind !== "public") throw invalid(FIELD, `points to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);
    return { href };
  }
  if (isLocalhostName(host)) throw invalid(FIELD, `${host} is a loopback name; only public destinations are allowed`);
  return { href, resolveHost: host };
}

/**
 * The DNS half: every address of the host must be public. INVALID_ARGUMENT
 * when the name does not resolve or points somewhere private; UNAVAILABLE
 * when DNS fails or does not answer within the timeout.
 */
export async function checkDestination(parsed: ParsedTargetUrl, options: Pick<TargetUrlOptions, "resolve" | "resolveTimeoutMs">): Promise<void> {
  const host = parsed.resolveHost;
  if (host === undefined) return;
  if (!options.resolve) throw new Error("checkDestination needs a resolver");
  let addresses: string[];
  try {
    addresses = await resolveWithin(options.resolve, host, options.resolveTimeoutMs ?? 5000);
  } catch (err) {
    if (NO_ADDRESS_CODES.has((err as { code?: string }).code ?? "")) throw invalid(FIELD, `host ${host} does not resolve`);
    throw targetUnavailable(host, err);
  }
  if (addresses.length === 0) throw invalid(FIELD, `host ${host} does not resolve`);
  for (const address of addresses) {
    const kind = classifyIp(address);
    if (kind !== "public") {
      throw invalid(FIELD, `host ${host} resolves to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);
    }
  }
}

/**
 * Checks a target_url; resolves to its normalised form (WHATWG href) or
 * throws INVALID_ARGUMENT "target_url: <reason>" (or UNAVAILABLE, see above).
 */
export async function checkTargetUrl(value: string, options: TargetUrlOptions = {}): Promise<string> {
  const parsed = parseTargetUrl(value, options);
  await checkDestination(parsed, options);
  return parsed.href;
}
