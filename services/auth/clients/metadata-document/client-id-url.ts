// A client_id that is a URL: the address of the client's metadata document.
import { DocumentRefusal } from "./document-refusal.js";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The longest client_id URL accepted (as for redirect URIs). */
const MAX_URL_LENGTH = 2048;

/** Whether a client_id names a metadata document (an http(s) URL) rather than a registration. */
export const isDocumentClientId = (clientId: string): boolean => /^https?:\/\//i.test(clientId);

/**
 * draft-ietf-oauth-client-id-metadata-document §3: "Client identifier URLs
 * MUST have an "https" scheme, MUST contain a path component, MUST NOT
 * contain single-dot or double-dot path segments, MAY contain a query string
 * component, MUST NOT contain a fragment component and MUST NOT contain a
 * username or password component"; "Client identifier URLs SHOULD NOT
 * include a query string component": refused here. With insecure redirects
 * allowed (development), http on a loopback host is accepted too.
 */
export function checkDocumentUrl(clientId: string, allowInsecure: boolean): URL {
  const refuse = (what: string) => new DocumentRefusal(clientId.slice(0, 200), what);
  if (clientId.length > MAX_URL_LENGTH)
    throw refuse(`cannot be used: the URL is longer than ${MAX_URL_LENGTH} characters`);
  if (/[\s\u0000-\u001f\u007f]/.test(clientId))
    throw refuse("cannot be used: the URL contains spaces or control characters");
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw refuse("cannot be used: the client_id is not a valid URL");
  }
  const insecureOk = allowInsecure && url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== "https:" && !insecureOk) throw refuse("cannot be used: a client_id URL must use https");
  if (url.username || url.password) throw refuse("cannot be used: the URL must not contain a user name or password");
  if (clientId.includes("#")) throw refuse("cannot be used: the URL must not contain a fragment");
  if (clientId.includes("?")) throw refuse("cannot be used: the URL must not contain a query");
  const rawPath = clientId.slice(clientId.indexOf("//") + 2).replace(/^[^/]*/, "");
  if (rawPath.split("/").some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) {
    throw refuse("cannot be used: the URL must not contain . or .. path segments");
  }
  if (url.pathname === "/" || url.pathname === "") throw refuse("cannot be used: the URL must have a path");
  // The document's client_id is compared with this string exactly: the URL
  // fetched must be the same string, not a normalised variant of it.
  if (url.href !== clientId) throw refuse(`cannot be used: the URL is not in its normal form (${url.href})`);
  return url;
}
