// The rules a subscription's target_url must meet. The IP classification
// behind them is services/shared/net/ip-address.ts, which the delivery service
// applies again to every resolved address right before it connects (DNS can
// change after create/update).
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
// "example.com"), so what is stored would not be what was sent. For the same
// reason the URL must be written in full, scheme "://" host: the parser
// repairs "http:///x", "http:/x", "http:x" and "http:\\x" (a backslash is a
// slash to it) all into "http://x/", and drops an empty "@" before the host;
// each is refused rather than rewritten, in development too.
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
import { isIP } from "node:net";
import { TargetUnavailableSchema } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import { NO_ADDRESS_CODES, isLocalhostName, type Resolver } from "../../shared/net/dns-resolver.js";
import { IP_CLASS_LABELS, classifyIp } from "../../shared/net/ip-address.js";
import { invalid } from "../../shared/validation.js";

export const TARGET_URL_MAX_LENGTH = 2048;

export interface TargetUrlOptions {
  /** Let private, loopback, link-local… destinations through (development, tests). */
  allowPrivate?: boolean;
  /** Let http:// through (development, tests). */
  allowHttp?: boolean;
  /** How names are resolved (the webhook app passes the shared target resolver, shared/net/dns-resolver.ts); required unless allowPrivate. */
  resolve?: Resolver;
  /** The most a lookup may take before the check is UNAVAILABLE (default 5 s). */
  resolveTimeoutMs?: number;
}

const FIELD = "target_url";

/** Ports a target may use besides the scheme's default: the unprivileged range. */
export const TARGET_PORT_MIN = 1024;

/** C0 controls, DEL and C1 controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** RFC 3986 §3.1 scheme, then, when present, "//" and the authority (up to the path, query or fragment). */
const SCHEME_AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/([^/?#]*))?/;

/**
 * RFC 9110 §4.2.1: http-URI = "http" "://" authority path-abempty [ "?"
 * query ], likewise https-URI; "A sender MUST NOT generate an "http" URI with
 * an empty host identifier. A recipient that processes such a URI reference
 * MUST reject it as invalid." RFC 3986 §2 has no place for "\" in a URI. What
 * the WHATWG parser would otherwise repair into another URL is refused here,
 * before it parses: the http(s) scheme not followed by "//" and a host, a
 * backslash anywhere, an "@" in the authority (user-info, empty or not).
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

/** UNAVAILABLE for a lookup that failed; the detail is what the client is told. */
export function targetUnavailable(host: string, cause: unknown): ConnectError {
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
    timer = setTimeout(
      () => reject(Object.assign(new Error(`DNS lookup of ${hostname} took over ${ms} ms`), { code: "ETIMEOUT" })),
      ms,
    );
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
 * The rules that need no DNS: syntax (written in full), scheme, user-info,
 * fragment, control characters, port, length, and literal IP destinations. Throws
 * INVALID_ARGUMENT "target_url: <reason>".
 */
export function parseTargetUrl(
  value: string,
  options: Omit<TargetUrlOptions, "resolve" | "resolveTimeoutMs"> = {},
): ParsedTargetUrl {
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
  if (url.port !== "" && Number(url.port) < TARGET_PORT_MIN) {
    throw invalid(
      FIELD,
      `port ${url.port} is not allowed; use the default port or one from ${TARGET_PORT_MIN} to 65535`,
    );
  }
  const href = url.href;
  if (href.length > TARGET_URL_MAX_LENGTH)
    throw invalid(FIELD, `at most ${TARGET_URL_MAX_LENGTH} characters (once normalised)`);
  if (options.allowPrivate) return { href };

  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) {
    const kind = classifyIp(host);
    if (kind !== "public")
      throw invalid(FIELD, `points to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`);
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
export async function checkDestination(
  parsed: ParsedTargetUrl,
  options: Pick<TargetUrlOptions, "resolve" | "resolveTimeoutMs">,
): Promise<void> {
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
    if (kind !== "public") {
      throw invalid(
        FIELD,
        `host ${host} resolves to a ${IP_CLASS_LABELS[kind]} address; only public destinations are allowed`,
      );
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
