// The destination check at connect time, of webhook deliveries and of client
// metadata document fetches. CONTRACT: target URLs are "checked on create and
// update, and again on every delivery (DNS rebinding)". The name is resolved
// here, when undici connects, and the connection goes to an address that was
// checked, never one looked up again later. As at save time
// (services/webhook/subscriptions/target-url.ts), a name is refused when ANY
// of its addresses is not public. Literal IP hosts never reach a lookup, so
// checkLiteralHost covers them before the request.
import { isIP } from "node:net";
import type { LookupFunction } from "node:net";
import { isLocalhostName, type Resolver } from "./dns-resolver.js";
import { ipRefusal } from "./ip-address.js";

/** The destination is not allowed: the attempt is logged as refused, no connection is made. */
export class DestinationRefusedError extends Error {
  readonly code = "ERR_DESTINATION_REFUSED";
  constructor(message: string) {
    super(message);
    this.name = "DestinationRefusedError";
  }
}

/** A literal IP in the URL's host: refused unless public (or insecure targets are allowed). */
export function checkLiteralHost(url: URL, allowInsecure: boolean): void {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (allowInsecure || isIP(host) === 0) return;
  const why = ipRefusal(host);
  if (why) throw new DestinationRefusedError(why);
}

/** net.connect's `lookup`: resolves with `resolve`, refuses localhost names and non-public answers unless allowed. */
export function safeLookup(resolve: Resolver, allowInsecure: boolean): LookupFunction {
  return (hostname, options, callback) => {
    // RFC 6761 §6.3: "Name resolution APIs SHOULD NOT send queries for
    // localhost names to their configured caching DNS server(s)." Such a name
    // is loopback: refused as one, without a query.
    if (!allowInsecure && isLocalhostName(hostname)) {
      return process.nextTick(() => callback(new DestinationRefusedError(`${hostname} is a loopback name`), "", 0));
    }
    resolve(hostname).then(
      (found) => {
        if (!allowInsecure) {
          for (const address of found) {
            const why = ipRefusal(address);
            if (why) return callback(new DestinationRefusedError(`${hostname}: ${why}`), "", 0);
          }
        }
        const family = typeof options.family === "number" ? options.family : 0;
        const list = found
          .map((address) => ({ address, family: isIP(address) }))
          .filter((a) => a.family !== 0 && (!family || a.family === family));
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
