// How a webhook target's host is resolved, at save time and at delivery: one
// c-ares resolver, so both checks ask the same servers. Not getaddrinfo: it
// runs on libuv's small thread pool and cannot be cancelled, so one tenant's
// name whose DNS never answers would hold everyone's lookups.
import { Resolver as DnsResolver, lookup as systemLookup } from "node:dns/promises";

/** Every address a hostname resolves to (rejects with a node:dns error code when it cannot). */
export type Resolver = (hostname: string) => Promise<string[]>;

/** Answers that mean "this name has no address" (NXDOMAIN, no A/AAAA record), not "DNS failed". */
export const NO_ADDRESS_CODES: ReadonlySet<string> = new Set(["ENOTFOUND", "ENODATA"]);

export interface CaresResolverOptions {
  /** The most one lookup (A and AAAA at once) may take; per-try timeouts are derived from it. */
  timeoutMs: number;
  servers?: readonly string[];
}

const errorCode = (err: unknown): string | undefined => (err as { code?: string } | undefined)?.code;

/**
 * Every A and AAAA address of a name. Rejects with ENOTFOUND or ENODATA when
 * it has none, with any other c-ares error when DNS failed, even for one of the
 * two queries: a partial answer could hide the private address the check must see.
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
const systemResolver: Resolver = async (hostname) =>
  (await systemLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

export interface TargetResolverOptions extends CaresResolverOptions {
  /** Insecure targets allowed (development, tests): what c-ares cannot resolve is asked of the system's resolver. */
  allowInsecure: boolean;
}

export function targetResolver(options: TargetResolverOptions): Resolver {
  const cares = caresResolver(options);
  if (!options.allowInsecure) return cares;
  // RFC 6761 §6.3: "Name resolution APIs SHOULD NOT send queries for localhost names" to DNS servers.
  return (hostname) =>
    isLocalhostName(hostname) ? systemResolver(hostname) : cares(hostname).catch(() => systemResolver(hostname));
}
