// How a webhook target's host is resolved, when a subscription is saved
// (services/webhook) and when a delivery connects (services/delivery): one
// resolver, c-ares (node:dns Resolver), A and AAAA, with WEBHOOK_DNS_SERVERS
// and WEBHOOK_DNS_TIMEOUT_MS, so both checks ask the same servers.
//
// Not getaddrinfo (dns.lookup): that runs on libuv's thread pool of 4, shared
// with scrypt and file I/O, cannot be cancelled, and waits as long as the
// system resolver likes; one tenant's name whose DNS never answers would hold
// the pool (or, behind a limiter, the queue) and every tenant's creates would
// wait behind it. c-ares queries are sockets on the event loop: each one
// costs its own timeout and nobody else anything.
//
// c-ares reads /etc/resolv.conf for the servers, but not /etc/hosts: a target
// is a public name, which the hosts file has no business answering. With
// insecure targets allowed (development), the system's resolver answers what
// c-ares cannot (localhost, container names from the hosts file).
import { Resolver as DnsResolver, lookup as systemLookup } from "node:dns/promises";

/** Every address a hostname resolves to (rejects with a node:dns error code when it cannot). */
export type Resolver = (hostname: string) => Promise<string[]>;

/** Answers that mean "this name has no address" (NXDOMAIN, no A/AAAA record), not "DNS failed". */
export const NO_ADDRESS_CODES: ReadonlySet<string> = new Set(["ENOTFOUND", "ENODATA"]);

export interface CaresResolverOptions {
  /** The most one lookup (A and AAAA at once) may take; per-try timeouts are derived from it. */
  timeoutMs: number;
  /** "ip" or "ip:port" entries; unset: the system's (resolv.conf). */
  servers?: readonly string[];
}

const errorCode = (err: unknown): string | undefined => (err as { code?: string } | undefined)?.code;

/**
 * Every A and AAAA address of a name. Rejects with the c-ares error: ENOTFOUND
 * or ENODATA when the name has no address at all, anything else (ETIMEOUT,
 * ESERVFAIL, ECONNREFUSED, ...) when DNS failed, including when one of the two
 * queries failed while the other answered: a partial answer could hide the
 * private address the check must see.
 */
export function caresResolver(options: CaresResolverOptions): Resolver {
  // c-ares doubles the timeout on each retry: 2 tries take about 3 × timeout.
  const resolver = new DnsResolver({ timeout: Math.max(20, Math.floor(options.timeoutMs / 4)), tries: 2 });
  if (options.servers?.length) resolver.setServers([...options.servers]);
  return async (hostname) => {
    const answers = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses: string[] = [];
    let noAddress: unknown;
    for (const answer of answers) {
      if (answer.status === "fulfilled") addresses.push(...answer.value);
      else if (NO_ADDRESS_CODES.has(errorCode(answer.reason) ?? "")) noAddress ??= answer.reason;
      else throw answer.reason;
    }
    if (addresses.length === 0)
      throw noAddress ?? Object.assign(new Error(`no address for ${hostname}`), { code: "ENODATA" });
    return addresses;
  };
}

/** `localhost`, `*.localhost` (RFC 6761), with or without the trailing root dot. */
export function isLocalhostName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return h === "localhost" || h.endsWith(".localhost");
}

/** The system's resolver (getaddrinfo: hosts file, container names). */
export const systemResolver: Resolver = async (hostname) =>
  (await systemLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

export interface TargetResolverOptions extends CaresResolverOptions {
  /** Insecure targets allowed (development, tests): what c-ares cannot resolve is asked of the system's resolver. */
  allowInsecure: boolean;
}

/** The resolver of webhook targets, at save time and at delivery time alike. */
export function targetResolver(options: TargetResolverOptions): Resolver {
  const cares = caresResolver(options);
  if (!options.allowInsecure) return cares;
  // RFC 6761 §6.3: "Name resolution APIs SHOULD NOT send queries for
  // localhost names to their configured caching DNS server(s)."
  return (hostname) =>
    isLocalhostName(hostname) ? systemResolver(hostname) : cares(hostname).catch(() => systemResolver(hostname));
}
