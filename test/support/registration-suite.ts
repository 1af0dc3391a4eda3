// The dynamic client registration suites (test/oauth/oauth-registration*.test.ts):
// a platform with registration turned on and a low limit per address, its
// gateway trusting a loopback proxy's X-Forwarded-For, so that each test
// registers from addresses of its own. Each suite file calls
// useRegistrationSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { startPlatform, type Platform } from "./platform.js";

/** The owner of the platform's organisation, who logs in to authorize. */
export const MEMBER = { email: "owner@register.test", password: "correct horse battery" };
/** OAUTH_REGISTRATION_LIMIT: registrations an hour from one address. */
export const LIMIT = 4;
export const LOOPBACK_REDIRECT = "http://127.0.0.1:41234/callback";

export let platform: Platform;
export let base: string;
let addressCount = 0;
/** An address no other registration of the file used. */
export const freshAddress = () => `198.51.100.${++addressCount}`;

/** The platform, started before the file's tests and stopped after them. */
export function useRegistrationSuite(): void {
  beforeAll(async () => {
    platform = await startPlatform({
      auth: true,
      config: { OAUTH_DYNAMIC_REGISTRATION: "true", OAUTH_REGISTRATION_LIMIT: String(LIMIT) },
      gateway: { publicUrlPort: true, bus: true, trustedProxies: ["127.0.0.1"] },
      member: { organisation: "Register Cards", ...MEMBER },
    });
    base = platform.base;
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });
}

/** POST /oauth/register from `address` (X-Forwarded-For, from the trusted loopback proxy). */
export function register(body: unknown, address = freshAddress(), contentType = "application/json"): Promise<Response> {
  return fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": contentType, "x-forwarded-for": address },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** A registration that must succeed: its answer. */
export async function registered(body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await register(body);
  const json = (await res.json()) as Record<string, unknown>;
  expect(res.status, JSON.stringify(json)).toBe(201);
  return json;
}

/** Every client the auth service holds. */
export const clientCount = async () => (await platform.auth.client(AuthService).listClients({})).clients.length;

/** POST /oauth/token with a form of `fields`: its status and body. */
export async function token(
  fields: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
