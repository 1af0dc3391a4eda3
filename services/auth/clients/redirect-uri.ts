// Redirect URIs a client may register (RFC 6749 §3.1.2, RFC 9700 §2.1).
import { invalid } from "../../shared/validation.js";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * RFC 6749 §3.1.2: "The redirection endpoint URI MUST be an absolute URI" and
 * "MUST NOT include a fragment component". RFC 9700 §2.1: https, except
 * loopback http for native apps (RFC 8252 §7.3).
 */
export function checkRedirectUri(value: string, options: { allowInsecure: boolean }): string {
  // URL parsing would quietly drop spaces, tabs and newlines; the stored value
  // must be exactly what an authorization request can match.
  if (/[\s\u0000-\u001f\u007f]/.test(value)) throw invalid("redirect_uri", "must not contain spaces or control characters");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid("redirect_uri", `not an absolute URI: ${JSON.stringify(value.slice(0, 100))}`);
  }
  if (value.length > 2048) throw invalid("redirect_uri", "at most 2048 characters");
  if (value.includes("#")) throw invalid("redirect_uri", "must not contain a fragment");
  if (url.username || url.password) throw invalid("redirect_uri", "must not contain user information");
  const insecureOk = options.allowInsecure || LOOPBACK.has(url.hostname);
  if (url.protocol === "http:" && !insecureOk) throw invalid("redirect_uri", "must use https (http only for loopback)");
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw invalid("redirect_uri", "must be an https URL");
  }
  // Stored as registered: the authorization request must match it exactly.
  return value;
}
