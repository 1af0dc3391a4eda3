// The end-to-end delivery suites (test/delivery/delivery*.test.ts): contacts
// changed over the organisation RPC reach a local HTTP receiver through the
// real organisation, webhook and delivery services, with the retry schedule
// and the timeout shortened to fit a test. Each suite file calls
// useDeliveryE2eSuite() once.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Config } from "../../services/shared/config.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import { startPlatform, type Platform, type StartedService } from "./platform.js";
import { startReceiver, type Answer, type Receiver } from "./receiver.js";

export const TOKEN = "d".repeat(40);
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

const shared = {
  WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
  // Retries within a test's patience; the hanging receiver times out after one second.
  DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.2,0.2",
  DELIVERY_TIMEOUT_MS: "1000",
  DELIVERY_CLAIM_LEASE_SECONDS: "10",
  DELIVERY_POLL_MS: "50",
};

export let platform: Platform;
export let base: Config;
export let receiver: Receiver;
export let organisation: StartedService<ServiceApp>;
export let webhook: StartedService<ServiceApp>;
export let delivery: StartedService<ServiceApp>;
export let orgs: ReturnType<typeof organisation.client<typeof OrganisationService>>;
export let hooks: ReturnType<typeof webhook.client<typeof WebhookService>>;
export let log: ReturnType<typeof delivery.client<typeof DeliveryService>>;

/** The receiver and the platform, started before the file's tests and stopped after them. */
export function useDeliveryE2eSuite(): void {
  beforeAll(async () => {
    receiver = await startReceiver();
    platform = await startPlatform({ token: TOKEN, config: shared, webhook: true, delivery: true });
    ({ config: base, organisation, webhook, delivery } = platform);
    orgs = organisation.client(OrganisationService);
    hooks = webhook.client(WebhookService);
    log = delivery.client(DeliveryService);
  });

  afterAll(async () => {
    await platform?.stop();
    await receiver?.close();
  });
}

/** A new organisation, an application of it, and a subscription of theirs to a receiver path. */
export async function subscribe(name: string, eventType = EventType.CONTACT_CREATED, answer?: (n: number) => Answer) {
  const org = await orgs.createOrganisation({
    name,
    ownerEmail: `${randomUUID()}@delivery.test`,
    ownerPassword: "correct horse",
  });
  const owner = { organisationId: org.organisation!.id, clientId: `zapier-${randomUUID().slice(0, 8)}` } as Owner;
  const route = receiver.route(`/hooks/${randomUUID()}`, answer);
  const created = await hooks.createSubscription({ owner, targetUrl: route.url, eventType });
  return {
    owner,
    organisationId: owner.organisationId,
    route,
    subscription: created.subscription!,
    secret: created.secret,
  };
}

/** A contact of the organisation, created over the organisation RPC: its contact.created event. */
export const createContact = (organisationId: string, firstName = "Ada") =>
  orgs.createContact({
    organisationId,
    fields: { firstName, lastName: "Lovelace", email: "ada@example.test", company: "Engines" },
  });

/** A received request's headers as standardwebhooks' verify() takes them: one string each. */
export const headers = (h: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]));
