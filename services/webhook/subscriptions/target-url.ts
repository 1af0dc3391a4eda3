// The rules a subscription's target_url must meet: an absolute https URL of at
// most 2048 characters, written in full, without user-info, fragment or
// control characters (refused rather than silently rewritten by the WHATWG
// parser, so what is stored is what was sent), on the default port or one
// from 1024 up. Its destination must be public: a literal IP is classified, a
// hostname resolved and refused when ANY address is not public (the delivery
// service checks again at connect time, shared/net/ip-address.ts). Development
// turns on allowHttp / allowPrivate (then names are not resolved).
//
// DNS: a name without an address is the caller's mistake (INVALID_ARGUMENT);
// DNS that fails or times out is ours (UNAVAILABLE, shown as a 503).
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isIP } from "node:net";
import { TargetUnavailableSchema } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { NO_ADDRESS_CODES, isLocalhostName, type Resolver } from "../../shared/net/dns-resolver.js";
import { IP_CLASS_LABELS, classifyIp, type IpClass } from "../../shared/net/ip-address.js";
import { invalid } from "../../shared/validation.js";

export const TARGET_URL_MAX_LENGTH = 2048;

export interface TargetUrlOptions {
  /** Let private, loopback, link-local… destinations through (development, tests). */
  allowPrivate?: boolean;
  /** Let http:// through (development, tests). */
  allowHttp?: boolean;
  /** Required unless allowPrivate. */
  resolve?: Resolver;
  /** The most a lookup may take before the check is UNAVAILABLE (default 5 s). */
  resolveTimeoutMs?: number;
}

const FIELD = "target_url";

/** Ports a target may use besides the scheme's default: the unprivileged range (not SSH, SMTP, DNS…). */
const TARGET_PORT_MIN = 1024;

/** C0 controls, DEL and C1 controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** RFC 3986 §3.1 scheme, then, when present, "//" and the authority (up to the path, query or fragment). */
const SCHEME_AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/([^/?#]*))?/;

/**
 * RFC 9110 §4.2.1: "A recipient that processes such a URI reference MUST
 * reject it as invalid" (an empty host). What the WHATWG parser would repair
 * into another URL ("http:/x", "http:\\x", "@" before the host) is refused.
 */
function checkWrittenInFull(raw: string): void {
  if (raw.includes("\\")) throw invalid(FIELD, "must not contain backslashes (\\); a URL's separator is /");
  const m = SCHEME_AUTHORITY.exec(raw);
  const scheme = m?.[1]?.toLowerCase();
  // No scheme, or another one: refused below, for what it is.
  if (!m || (scheme !== "http" && scheme !== "https")) return;
  const authority = m[3];
  const example = `such as ${scheme}://example.com/webhooks`;
  if (authority === undefined) throw invalid(FIELD, `expected // and a host right after ${scheme}: (${example})`);
  if (authority === "") throw invalid(FIELD, `expected a host right after ${scheme}:// (${example})`);
  if (authority.includes("@")) throw invalid(FIELD, "must not contain user-info (user:password@)");
}

const notPublic = (what: string, kind: IpClass) =>
  invalid(FIELD, `${what} a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);

/** UNAVAILABLE for a lookup that failed; the detail is what the client is told. */
function targetUnavailable(host: string, cause: unknown): ConnectError {
  const description = `target_url: the host ${host} could not be resolved right now (DNS did not answer); try again later`;
  return new ConnectError(
    description,
    Code.Unavailable,
    undefined,
    [{ desc: TargetUnavailableSchema, value: create(TargetUnavailableSchema, { description }) }],
    cause,
  );
}

async function resolveWithin(resolve: Resolver, hostname: string, ms: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const err = Object.assign(new Error(`DNS lookup of ${hostname} took over ${ms} ms`), { code: "ETIMEOUT" });
    timer = setTimeout(() => reject(err), ms);
  });
  return Promise.race([resolve(hostname), timeout]).finally(() => clearTimeout(timer));
}

/**
 * The rules that need no DNS; throws INVALID_ARGUMENT "target_url: <reason>". `href`: the normalised URL,
 * what is stored; `resolveHost`: the hostname still to resolve.
 */
export function parseTargetUrl(value: string, options: Omit<TargetUrlOptions, "resolve"> = {}) {
  if (CONTROL.test(value)) throw invalid(FIELD, "must not contain control characters (tabs, newlines, ...)");
  // Spaces around the URL are dropped (a paste); inside it, the URL parser refuses or encodes them.
  const raw = value.trim();
  if (!raw) throw invalid(FIELD, "required");
  if (raw.length > TARGET_URL_MAX_LENGTH) throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters`);
  checkWrittenInFull(raw);
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
  if (url.hash || raw.includes("#"))
    throw invalid(FIELD, "must not contain a fragment (#…): it is never sent to the server");
  if (!url.hostname) throw invalid(FIELD, "expected a host");
  // url.port is "" for the scheme's default port (443, or 80 for http).
  const portRange = `the default port or one from ${TARGET_PORT_MIN} to 65535`;
  if (url.port !== "" && Number(url.port) < TARGET_PORT_MIN)
    throw invalid(FIELD, `port ${url.port} is not allowed; use ${portRange}`);
  const href = url.href;
  if (href.length > TARGET_URL_MAX_LENGTH)
    throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters (once normalised)`);
  if (options.allowPrivate) return { href, resolveHost: undefined };

  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) {
    const kind = classifyIp(host);
    if (kind !== "public") throw notPublic("points to", kind);
    return { href, resolveHost: undefined };
  }
  if (isLocalhostName(host)) throw invalid(FIELD, `${host} is a loopback name; only public destinations are allowed`);
  return { href, resolveHost: host };
}

/** The DNS half: every address of the host must be public. */
export async function checkDestination(parsed: { resolveHost?: string }, options: TargetUrlOptions): Promise<void> {
  const host = parsed.resolveHost;
  if (host === undefined) return;
  if (!options.resolve) throw new Error("checkDestination needs a resolver");
  let addresses: string[];
  try {
    addresses = await resolveWithin(options.resolve, host, options.resolveTimeoutMs ?? 5000);
  } catch (err) {
    if (NO_ADDRESS_CODES.has((err as { code?: string }).code ?? ""))
      throw invalid(FIELD, `host ${host} does not resolve`);
    throw targetUnavailable(host, err);
  }
  if (addresses.length === 0) throw invalid(FIELD, `host ${host} does not resolve`);
  for (const address of addresses) {
    const kind = classifyIp(address);
    if (kind !== "public") throw notPublic(`host ${host} resolves to`, kind);
  }
}

/** Both halves; resolves to the normalised URL. */
export async function checkTargetUrl(value: string, options: TargetUrlOptions = {}): Promise<string> {
  const parsed = parseTargetUrl(value, options);
  await checkDestination(parsed, options);
  return parsed.href;
}
