// A client application as the REST tests drive it: its client_credentials
// token (taken once, then reused), requests with that bearer token, and the
// check of the contract's error shape.
import { expect } from "vitest";

export type AppClient = { id: string; secret: string };

export interface ApiCaller {
  /** The client's access token (client_credentials with every scope it has), taken once. */
  tokenOf(client: AppClient): Promise<string>;
  /**
   * A request with the client's bearer token (none for undefined). A body that is not a
   * string is sent as JSON; a path may also be an absolute URL (a Link header's).
   */
  call(
    client: AppClient | undefined,
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

/** `base()`: the gateway's base URL, known once the test's gateway listens. */
export function apiCaller(base: () => string): ApiCaller {
  const tokens = new Map<string, string>();
  async function tokenOf(client: AppClient): Promise<string> {
    const known = tokens.get(client.id);
    if (known) return known;
    const res = await fetch(`${base()}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: client.id,
        client_secret: client.secret,
      }).toString(),
    });
    const body = (await res.json()) as { access_token: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    tokens.set(client.id, body.access_token);
    return body.access_token;
  }
  async function call(
    client: AppClient | undefined,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const h: Record<string, string> = { ...headers };
    if (client) h.authorization = `Bearer ${await tokenOf(client)}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === "string" ? body : JSON.stringify(body);
      h["content-type"] ??= "application/json";
    }
    return fetch(path.startsWith("http") ? path : `${base()}${path}`, { method, headers: h, body: payload });
  }
  return { tokenOf, call };
}

/** The contract's error: the status, a JSON body of exactly error and error_description, never stored. */
export async function expectError(
  res: Response,
  status: number,
  error: string,
  description?: string | RegExp,
): Promise<void> {
  const body = (await res.json()) as { error: string; error_description: string };
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.headers.get("cache-control"), "an error answer is never stored").toBe("no-store");
  expect(Object.keys(body).sort()).toEqual(["error", "error_description"]);
  expect(body.error).toBe(error);
  if (typeof description === "string") expect(body.error_description).toBe(description);
  else if (description) expect(body.error_description).toMatch(description);
}
