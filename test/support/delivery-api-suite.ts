// The delivery log's suites: real HTTP to the gateway with real
// client_credentials tokens, in front of the real auth, organisation, webhook
// and delivery services (the platform fixture), delivering to a local
// receiver (support/receiver.ts), with the retry schedule and the disabling
// period shortened to fit a test. Each suite file calls
// useDeliveryApiSuite() once.
import { afterAll, beforeAll, expect } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { apiCaller, type AppClient } from "./api-client.js";
import { startPlatform, type Platform, type StartedService } from "./platform.js";
import { startReceiver, type Receiver } from "./receiver.js";
import type { AttemptJson } from "../../gateway/routes/delivery-json.js";

export const TOKEN = "w".repeat(40);
export const PATH = "/oauth/webhooks/subscriptions";
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ATTEMPT_KEYS = [
  "attempt",
  "attempted_at",
  "delivery_id",
  "duration_ms",
  "error",
  "event_id",
  "event_type",
  "id",
  "next_retry_at",
  "outcome",
  "status_code",
];
export const DELIVERY_KEYS = [
  "attempts",
  "created_at",
  "error",
  "event_id",
  "event_type",
  "id",
  "next_retry_at",
  "status",
  "status_code",
  "subscription_id",
  "updated_at",
];

export const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  // Nine attempts over about five seconds; a subscription failing all of them for 2 s (and 4 attempts) is disabled.
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.3,0.4,0.5,0.6,0.8,1,1",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: "10",
  DELIVERY_POLL_MS: "50",
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "2",
  WEBHOOK_DISABLE_AFTER_FAILURES: "4",
};

export let platform: Platform;
export let receiver: Receiver;
export let organisation: StartedService<ServiceApp>;
export let auth: StartedService<ServiceApp>;
export let webhook: StartedService<ServiceApp>;
export let base: string;
export let orgs: ReturnType<typeof organisation.client<typeof OrganisationService>>;
export let orgId: string;
export let otherOrgId: string;

export type Client = AppClient;
/** Owned by orgId, every scope. */
export let app: Client;
/** Another application of the same organisation. */
export let sibling: Client;
/** An application of the other organisation (the disabling tests run there). */
export let foreign: Client;
/** webhooks:read only. */
export let reader: Client;
/** contacts:read only. */
export let contactsOnly: Client;
export const { tokenOf, call } = apiCaller(() => base);

export interface SubscriptionBody {
  id: number;
  target_url: string;
  updated_at: string;
  disabled_at: string | null;
  disabled_reason: string | null;
}

/** An attempt as the delivery log route answers it: the one mapper's shape. */
export type AttemptBody = AttemptJson;

export async function subscribe(client: Client, target_url: string): Promise<SubscriptionBody> {
  const res = await call(client, "POST", PATH, { target_url, event_type: "contact.created" });
  const body = (await res.json()) as SubscriptionBody;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body;
}

export async function attempts(client: Client, subscriptionId: number, query = ""): Promise<AttemptBody[]> {
  const res = await call(client, "GET", `${PATH}/${subscriptionId}/deliveries${query}`);
  const body = (await res.json()) as AttemptBody[];
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

export const createContact = (organisationId: string, firstName: string) =>
  orgs.createContact({ organisationId, fields: { firstName, lastName: "Lovelace", email: "ada@example.test" } });

/** Registers the file's platform: started before its tests, stopped after; `config` changes the shared settings. */
export function useDeliveryApiSuite(config: Record<string, string> = {}): void {
  beforeAll(async () => {
    receiver = await startReceiver();
    platform = await startPlatform({
      token: TOKEN,
      config: { ...shared, ...config },
      auth: true,
      webhook: true,
      delivery: true,
      gateway: { publicUrlPort: true, bus: true, serviceUrls: {} },
    });
    ({ organisation, auth, webhook, base } = platform);

    orgs = organisation.client(OrganisationService);
    orgId = (
      await orgs.createOrganisation({
        name: "Logged Cards",
        ownerEmail: "owner@logged.test",
        ownerPassword: "password-l",
      })
    ).organisation!.id;
    otherOrgId = (
      await orgs.createOrganisation({
        name: "Flaky Cards",
        ownerEmail: "owner@flaky.test",
        ownerPassword: "password-f",
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
    contactsOnly = await make("Poller", orgId, ["contacts:read"]);
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
    await receiver?.close();
  });
}
