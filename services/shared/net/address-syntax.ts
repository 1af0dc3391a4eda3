// The syntax of the network addresses configuration accepts: no lookup, no
// classification (ip-address.ts decides what an address may be used for).
import { isIP } from "node:net";

/** "1.2.3.4", "1.2.3.4:53", "::1", "[::1]:53" (what dns.Resolver.setServers takes). */
export function isDnsServer(value: string): boolean {
  if (isIP(value)) return true;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!m || Number(m[3]) < 1 || Number(m[3]) > 65535) return false;
  return m[1] !== undefined ? isIP(m[1]) === 6 : isIP(m[2]!) === 4;
}

/** 10.0.0.1, ::1, 10.0.0.0/8, fd00::/8 */
export function isAddressOrCidr(value: string): boolean {
  const [address, prefix, ...rest] = value.split("/");
  const family = isIP(address ?? "");
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}
