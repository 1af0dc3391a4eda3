// A client_id that is a URL: the address of the client's metadata document.
import { LOOPBACK } from "../redirect-uri.js";
import { DocumentRefusal } from "./document-refusal.js";

/** The longest client_id URL accepted (as for redirect URIs). */
const MAX_URL_LENGTH = 2048;

/** Whether a client_id names a metadata document (an http(s) URL) rather than a registration. */
export const isDocumentClientId = (clientId: string): boolean => /^https?:\/\//i.test(clientId);

/**
 * draft-ietf-oauth-client-id-metadata-document §3: "Client identifier URLs
 * MUST have an "https" scheme, MUST contain a path component, MUST NOT
 * contain single-dot or double-dot path segments, [...] MUST NOT contain a
 * fragment component and MUST NOT contain a username or password component";
 * a query, which they "SHOULD NOT include", is refused too. With insecure
 * redirects allowed (development), http on a loopback host is accepted.
 */
export function checkDocumentUrl(clientId: string, allowInsecure: boolean): URL {
  const refuse = (what: string) => new DocumentRefusal(clientId.slice(0, 200), what);
  if (clientId.length > MAX_URL_LENGTH)
    throw refuse(`cannot be used: the URL is longer than ${MAX_URL_LENGTH} characters`);
  if (/[\s\u0000-\u001f\u007f]/.test(clientId))
    throw refuse("cannot be used: the URL contains spaces or control characters");
  const url = URL.parse(clientId);
  if (!url) throw refuse("cannot be used: the client_id is not a valid URL");
  const insecureOk = allowInsecure && url.protocol === "http:" && LOOPBACK.has(url.hostname);
  if (url.protocol !== "https:" && !insecureOk) throw refuse("cannot be used: a client_id URL must use https");
  if (url.username || url.password) throw refuse("cannot be used: the URL must not contain a user name or password");
  if (clientId.includes("#")) throw refuse("cannot be used: the URL must not contain a fragment");
  if (clientId.includes("?")) throw refuse("cannot be used: the URL must not contain a query");
  const rawPath = clientId.slice(clientId.indexOf("//") + 2).replace(/^[^/]*/, "");
  if (rawPath.split("/").some((segment) => /^(\.|%2e){1,2}$/i.test(segment))) {
    throw refuse("cannot be used: the URL must not contain . or .. path segments");
  }
  if (url.pathname === "/" || url.pathname === "") throw refuse("cannot be used: the URL must have a path");
  // The document's client_id must equal this string: the URL fetched is that string, never a normalised variant.
  if (url.href !== clientId) throw refuse(`cannot be used: the URL is not in its normal form (${url.href})`);
  return url;
}
