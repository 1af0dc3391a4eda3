// The suites of the gateway's resource side (test/oauth/oauth-resource*.test.ts):
// real HTTP to two gateways of one deployment, in front of the real auth and
// organisation services, an organisation and its applications; form posts,
// Basic authentication, tokens and GET /oauth/me. Each suite file calls
// useResourceSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import type { TestDatabase } from "./backends.js";
import { startPlatform, type Platform, type StartedService } from "./platform.js";

const TOKEN = "r".repeat(40);
export const FORM = "application/x-www-form-urlencoded";

export let platform: Platform;
export let db: TestDatabase;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<ServiceApp>;
/** Gateway a, where PUBLIC_URL says; gateway b, another process of the same deployment. */
export let a: string;
export let b: string;
export let orgId: string;
export let orgName: string;
/** An application the organisation owns: client_credentials, every scope. */
export let app: { id: string; secret: string };
/** Another one, allowed only webhooks:read. */
export let narrow: { id: string; secret: string };
export let publicClientId: string;

/** The platform and its two gateways, started before the file's tests and stopped after them. */
export function useResourceSuite(): void {
  beforeAll(async () => {
    // Gateway a listens where PUBLIC_URL (the issuer, and the REST API's
    // resource identifier: the audience of its tokens) says; gateway b, with
    // its own bus connection (on NATS: a second process's view), is another
    // process of the same deployment: the same PUBLIC_URL, another address.
    platform = await startPlatform({ token: TOKEN, auth: true, gateway: { publicUrlPort: true, bus: true } });
    ({ db, organisation, auth } = platform);
    const { bus, config: baseConfig } = platform;
    // On NATS, the stream exists before the timed revocations (its creation is not what they measure).
    if (bus.kind === "nats")
      await bus.publish(`${baseConfig.NATS_SUBJECT_PREFIX}.warm.up`, new Uint8Array(), "warm-up");
    a = platform.base;
    b = (await platform.addGateway({ name: "gateway-b", publicUrl: a, ownBus: true })).base;
    orgName = "Resource Cards";
    const created = await organisation
      .client(OrganisationService)
      .createOrganisation({ name: orgName, ownerEmail: "owner@resource.test", ownerPassword: "password-r" });
    orgId = created.organisation!.id;
    const clients = auth.client(AuthService);
    const full = await clients.createClient({ name: "Sync", ownerOrganisationId: orgId });
    app = { id: full.client!.clientId, secret: full.clientSecret };
    const limited = await clients.createClient({
      name: "Reader",
      ownerOrganisationId: orgId,
      scopes: ["webhooks:read"],
    });
    narrow = { id: limited.client!.clientId, secret: limited.clientSecret };
    const pub = await clients.createClient({ name: "CLI", redirectUris: ["http://127.0.0.1:8765/cb"], public: true });
    publicClientId = pub.client!.clientId;
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });
}

/** A form POST to `url`. */
export const post = (url: string, params: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": FORM, ...headers },
    body: new URLSearchParams(params).toString(),
  });
/** HTTP Basic client authentication (RFC 6749 §2.3.1: each part form-encoded). */
export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

/** A client_credentials access token of `client`, of `scope` when given. */
export async function accessToken(client: { id: string; secret: string }, scope?: string): Promise<string> {
  const res = await post(`${a}/oauth/token`, {
    grant_type: "client_credentials",
    client_id: client.id,
    client_secret: client.secret,
    ...(scope ? { scope } : {}),
  });
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.access_token;
}

/** GET /oauth/me on gateway `base` with `token`. */
export const me = (base: string, token: string) =>
  fetch(`${base}/oauth/me`, { headers: { authorization: `Bearer ${token}` } });
