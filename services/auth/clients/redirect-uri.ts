// Redirect URIs: what a client may register (RFC 6749 §3.1.2, RFC 9700 §2.1,
// RFC 8252 for native apps), and whether an authorization request's
// redirect_uri is one of them.
import { invalid } from "../../shared/validation.js";

/** The loopback host names of native apps' redirect URIs (RFC 8252 §7.3). */
export const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * The authorization response's own parameters (RFC 6749 §4.1.2; RFC 9207 §2): a redirect URI carrying one is ambiguous.
 */
const RESPONSE_PARAMETERS = ["code", "state", "iss", "error"];

/**
 * RFC 8252 §7.1: "apps MUST use a URI scheme based on a domain name under
 * their control, expressed in reverse order". A scheme without a period
 * (javascript, data, file, myapp) is not one.
 */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/i;

/**
 * RFC 6749 §3.1.2: "The redirection endpoint URI MUST be an absolute URI" and
 * "MUST NOT include a fragment component". https, but loopback http and
 * private-use schemes for native apps (RFC 8252 §7.1, §7.3).
 */
export function checkRedirectUri(value: string, options: { allowInsecure: boolean; public: boolean }): string {
  // URL parsing quietly drops spaces, tabs and newlines; the stored value must be exactly what a request can match.
  if (/[\s\u0000-\u001f\u007f]/.test(value))
    throw invalid("redirect_uri", "must not contain spaces or control characters");
  const url = URL.parse(value);
  if (!url) throw invalid("redirect_uri", `not an absolute URI: ${JSON.stringify(value.slice(0, 100))}`);
  if (value.length > 2048) throw invalid("redirect_uri", "at most 2048 characters");
  if (value.includes("#")) throw invalid("redirect_uri", "must not contain a fragment");
  if (url.username || url.password) throw invalid("redirect_uri", "must not contain user information");
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    if (!PRIVATE_USE_SCHEME.test(url.protocol)) {
      throw invalid(
        "redirect_uri",
        "must be an https URL, or a native app's reverse-domain scheme such as com.example.app:/cb",
      );
    }
    // An app claiming a scheme is a native app, and native apps are public
    // clients (RFC 8252 §8.5: secrets in them are not secret).
    if (!options.public) throw invalid("redirect_uri", "a private-use scheme (native app) is for public clients only");
  }
  const insecureOk = options.allowInsecure || LOOPBACK.has(url.hostname);
  if (url.protocol === "http:" && !insecureOk) throw invalid("redirect_uri", "must use https (http only for loopback)");
  const carried = RESPONSE_PARAMETERS.filter((name) => url.searchParams.has(name));
  if (carried.length) {
    throw invalid(
      "redirect_uri",
      `must not carry the authorization response's parameters in its query (${carried.join(", ")})`,
    );
  }
  return value;
}

/** A loopback IP redirect URI (http, 127.0.0.1 or [::1]) without its port, or undefined for any other URI. */
function withoutLoopbackPort(uri: string): string | undefined {
  const m = /^(http:\/\/(?:127\.0\.0\.1|\[::1\]))(?::(\d{1,5}))?([/?].*)?$/.exec(uri);
  if (!m || (m[2] !== undefined && Number(m[2]) > 65535)) return undefined;
  return `${m[1]}${m[3] ?? ""}`;
}

/**
 * RFC 9700 §2.1: "authorization servers MUST utilize exact string matching",
 * but RFC 8252 §7.3: "The authorization server MUST allow any port to be
 * specified at the time of the request for loopback IP redirect URIs". For a
 * public (native) client only, and only the port may differ.
 */
export function redirectUriMatches(registered: readonly string[], sent: string, client: { public: boolean }): boolean {
  if (registered.includes(sent)) return true;
  if (!client.public) return false;
  const loose = withoutLoopbackPort(sent);
  return loose !== undefined && registered.some((r) => withoutLoopbackPort(r) === loose);
}
