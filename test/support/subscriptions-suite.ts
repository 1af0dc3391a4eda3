// The webhook subscription REST API's suites: the gateway in front of the
// real organisation, auth and webhook services (the platform fixture), the
// webhook service resolving names through a DNS server of the test on a
// loopback port, two organisations and client applications with different
// scopes. Each suite file calls useSubscriptionsSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { apiCaller, type AppClient } from "./api-client.js";
import { TestDnsServer } from "./dns-server.js";
import { startPlatform, type Platform, type StartedService } from "./platform.js";

export const TOKEN = "s".repeat(40);
export const PATH = "/oauth/webhooks/subscriptions";
export const DNS_TIMEOUT_MS = 2000;
export const EVENT_TYPE_ERROR = "event_type: expected contact.created or contact.updated";

export let dns: TestDnsServer;
export let platform: Platform;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<ServiceApp>;
export let webhook: StartedService<ServiceApp>;
export let base: string;
export let orgId: string;
export let otherOrgId: string;

export type Client = AppClient;
/** Owned by orgId, every scope. */
export let app: Client;
/** Another application of the same organisation. */
export let sibling: Client;
/** An application of another organisation. */
export let foreign: Client;
/** webhooks:read only. */
export let reader: Client;
/** webhooks:read and webhooks:write, but not contacts:read. */
export let writer: Client;
/** contacts:read only. */
export let contactsOnly: Client;

export const { tokenOf, call } = apiCaller(() => base);

export interface SubscriptionBody {
  id: number;
  target_url: string;
  event_type: string;
  created_at: string;
  updated_at: string;
  secret?: string;
}

export async function create(
  client: Client,
  target_url: string,
  event_type = "contact.created",
): Promise<SubscriptionBody> {
  const res = await call(client, "POST", PATH, { target_url, event_type });
  const body = (await res.json()) as SubscriptionBody;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A fresh application of the organisation (its own pair), every scope. */
export async function ownClient(name: string): Promise<Client> {
  const res = await auth.client(AuthService).createClient({ name, ownerOrganisationId: orgId });
  return { id: res.client!.clientId, secret: res.clientSecret };
}

/** Registers the file's platform: started before its tests, stopped after. */
export function useSubscriptionsSuite(): void {
  beforeAll(async () => {
    dns = await TestDnsServer.start({
      "hooks.example.test": { A: ["93.184.215.14"] },
      "other.example.test": { A: ["93.184.215.15"], AAAA: ["2606:4700:4700::1111"] },
      "internal.example.test": { A: ["10.0.0.7"] },
      "mixed.example.test": { A: ["93.184.215.14"], AAAA: ["::1"] },
      "hang.example.test": "drop",
      "broken.example.test": "servfail",
    });
    platform = await startPlatform({
      token: TOKEN,
      auth: true,
      webhook: {
        config: {
          WEBHOOK_ALLOW_INSECURE_TARGETS: "false",
          WEBHOOK_DNS_SERVERS: dns.address,
          WEBHOOK_DNS_TIMEOUT_MS: String(DNS_TIMEOUT_MS),
        },
      },
      gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
    });
    ({ organisation, auth, webhook, base } = platform);

    const orgs = organisation.client(OrganisationService);
    orgId = (
      await orgs.createOrganisation({
        name: "Hooked Cards",
        ownerEmail: "owner@hooked.test",
        ownerPassword: "password-h",
      })
    ).organisation!.id;
    otherOrgId = (
      await orgs.createOrganisation({
        name: "Elsewhere",
        ownerEmail: "owner@elsewhere.test",
        ownerPassword: "password-e",
      })
    ).organisation!.id;
    const clients = auth.client(AuthService);
    const make = async (name: string, owner: string, scopes: string[] = []): Promise<Client> => {
      const res = await clients.createClient({ name, ownerOrganisationId: owner, scopes });
      return { id: res.client!.clientId, secret: res.clientSecret };
    };
    app = await make("Zap", orgId);
    sibling = await make("Make", orgId);
    foreign = await make("Zap elsewhere", otherOrgId);
    reader = await make("Reader", orgId, ["webhooks:read"]);
    writer = await make("Writer", orgId, ["webhooks:read", "webhooks:write"]);
    contactsOnly = await make("Poller", orgId, ["contacts:read"]);
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
    await dns?.close();
  });
}
