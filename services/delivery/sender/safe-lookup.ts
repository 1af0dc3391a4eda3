// The destination check at connect time. CONTRACT: target URLs are "checked
// on create and update, and again on every delivery (DNS rebinding)". The
// name is resolved here, when undici connects, and the connection goes to an
// address that was checked, never to one looked up again later: the idea of
// svix's webhook_http_client.rs (NonLocalDnsResolver under the connector, and
// a literal-IP check before the request). Stricter than svix, which keeps the
// allowed answers and fails only when none is left: as at save time
// (services/webhook/subscriptions/target-url.ts, whose classification this
// reuses, so both checks apply one rule), a name is refused when ANY of its
// addresses is not public. Literal IP hosts never reach a lookup (net.connect
// skips it), so checkLiteralHost covers them before the request.
import { Resolver as DnsResolver } from "node:dns/promises";
import { lookup as systemLookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { LookupFunction } from "node:net";
import { IP_CLASS_LABELS, classifyIp, type Resolver } from "../../webhook/subscriptions/target-url.js";

/** The destination is not allowed: the attempt is logged as refused, no connection is made. */
export class DestinationRefusedError extends Error {
  readonly code = "ERR_DESTINATION_REFUSED";
  constructor(message: string) {
    super(message);
    this.name = "DestinationRefusedError";
  }
}

/**
 * Names resolved by c-ares (A and AAAA) with its own timeout: lookups do not
 * queue on libuv's thread pool as getaddrinfo does, so a name whose DNS never
 * answers costs one attempt its timeout and nobody else anything.
 */
export function caresResolver(timeoutMs = 3000): Resolver {
  const resolver = new DnsResolver({ timeout: Math.max(1, Math.floor(timeoutMs / 2)), tries: 2 });
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses = [...(v4.status === "fulfilled" ? v4.value : []), ...(v6.status === "fulfilled" ? v6.value : [])];
    if (addresses.length === 0) {
      const reason = v4.status === "rejected" ? v4.reason : v6.status === "rejected" ? v6.reason : undefined;
      throw reason ?? Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" });
    }
    return addresses;
  };
}

/** Development: the system's resolver (hosts file, container names). */
export const systemResolver: Resolver = async (hostname) =>
  (await systemLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

function refusal(address: string): string | undefined {
  const kind = classifyIp(address);
  return kind === "public" ? undefined : `${address} is a ${IP_CLASS_LABELS[kind]} address`;
}

/** A literal IP in the URL's host: refused unless public (or insecure targets are allowed). */
export function checkLiteralHost(url: URL, allowInsecure: boolean): void {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (allowInsecure || isIP(host) === 0) return;
  const why = refusal(host);
  if (why) throw new DestinationRefusedError(why);
}

/** net.connect's `lookup`: resolves with `resolve`, refuses non-public answers unless allowed. */
export function safeLookup(resolve: Resolver, allowInsecure: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        if (!allowInsecure) {
          for (const address of found) {
            const why = refusal(address);
            if (why) return callback(new DestinationRefusedError(`${hostname}: ${why}`), "", 0);
          }
        }
        const family = typeof options.family === "number" ? options.family : 0;
        const list = found.map((address) => ({ address, family: isIP(address) })).filter((a) => a.family !== 0 && (!family || a.family === family));
        if (list.length === 0) {
          const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND", hostname });
          return callback(err, "", 0);
        }
        if (options.all) (callback as unknown as (e: null, a: typeof list) => void)(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}
