// OAuth request parameters (RFC 6749 §3.2) from a form or JSON body, and the
// client's credentials from the body or Basic (§2.3.1).
import { OAuthError, invalidClient } from "./oauth-errors.js";

export type Params = Record<string, string>;

// RFC 6749 §3.1: "Parameters sent without a value MUST be treated as if they were omitted from the
// request. [...] Request and response parameters MUST NOT be included more than once."
export function readParams(body: unknown, repeatable: readonly string[] = []): Params {
  if (body === undefined || body === null) return {};
  if (typeof body !== "object" || Array.isArray(body))
    throw new OAuthError("invalid_request", "the body must be a set of parameters");
  const out: Params = {};
  for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
    if (repeatable.includes(key)) continue;
    if (Array.isArray(value)) throw new OAuthError("invalid_request", `parameter ${key} is included more than once`);
    if (value === undefined || value === null || value === "") continue;
    if (typeof value !== "string") throw new OAuthError("invalid_request", `parameter ${key} must be a string`);
    out[key] = value;
  }
  return out;
}

/** Every value of a parameter that may repeat (RFC 8707 §2: resource), empty ones left out. */
export function readRepeated(body: unknown, name: string): string[] {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) return [];
  const value = (body as Record<string, unknown>)[name];
  const values = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  if (values.some((v) => typeof v !== "string"))
    throw new OAuthError("invalid_request", `parameter ${name} must be a string or strings`);
  return (values as string[]).filter((v) => v !== "");
}

interface PresentedClient {
  clientId: string;
  clientSecret: string;
  method: "client_secret_basic" | "client_secret_post" | "none";
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The client_id and secret of a Basic Authorization header; invalid_client when they are not well formed. */
export function decodeBasic(header: string): { id: string; secret: string } {
  let raw: string;
  try {
    raw = utf8.decode(Buffer.from(header.slice(6).trim(), "base64"));
  } catch {
    throw invalidClient("malformed Basic credentials");
  }
  const colon = raw.indexOf(":");
  if (colon < 0) throw invalidClient("malformed Basic credentials");
  // RFC 6749 §2.3.1: client_id and secret are form-urlencoded before Basic.
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s.replace(/\+/g, " "));
    } catch {
      throw invalidClient("malformed Basic credentials");
    }
  };
  return { id: decode(raw.slice(0, colon)), secret: decode(raw.slice(colon + 1)) };
}

export const isBasic = (authorization: string | undefined): authorization is string =>
  authorization !== undefined && /^basic /i.test(authorization);

// RFC 6749 §2.3: "The client MUST NOT use more than one authentication method in each request".
export function presentedClient(authorization: string | undefined, params: Params): PresentedClient | undefined {
  const basic = isBasic(authorization) ? decodeBasic(authorization) : undefined;
  if (basic) {
    if (params.client_secret !== undefined) {
      throw new OAuthError(
        "invalid_request",
        "use one client authentication method: Basic or client_secret in the body, not both",
      );
    }
    if (params.client_id !== undefined && params.client_id !== basic.id) {
      throw new OAuthError("invalid_request", "client_id in the body differs from the Basic credentials");
    }
    return { clientId: basic.id, clientSecret: basic.secret, method: "client_secret_basic" };
  }
  if (params.client_id === undefined) {
    if (params.client_secret !== undefined) throw new OAuthError("invalid_request", "client_secret without client_id");
    return undefined;
  }
  if (params.client_secret !== undefined) {
    return { clientId: params.client_id, clientSecret: params.client_secret, method: "client_secret_post" };
  }
  return { clientId: params.client_id, clientSecret: "", method: "none" };
}

/** RFC 7009 §2.1 and RFC 7662 §2.1: the client's credentials (required) and the parameters. */
export function tokenRequest(request: { body: unknown; headers: { authorization?: string } }) {
  const params = readParams(request.body);
  const client = presentedClient(request.headers.authorization, params);
  if (!client) throw invalidClient("client authentication is required (client_id and client_secret, or Basic)");
  return { client, params };
}
