// The webhook service as the webhook suites drive it over real RPC: a strict
// deployment (https and public destinations only) and a development one
// (insecure targets allowed) on one database and bus, with names under
// receiver.test resolved by a stand-in for DNS. Each suite file calls
// useWebhookSuite() once; the bindings below are set before its tests run.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { ServiceApp } from "../../services/shared/service-app.js";
import type { TargetUrlOptions } from "../../services/webhook/subscriptions/target-url.js";
import { createWebhookApp, startPlatform, type Platform, type StartedService } from "./platform.js";

/** How names are resolved: what the webhook app passes (a c-ares resolver), here a stand-in. */
type Resolver = NonNullable<TargetUrlOptions["resolve"]>;

const TOKEN = "t".repeat(40);
export const EVENT_TYPE_ERROR = "event_type: expected contact.created or contact.updated";

// Stands in for DNS: names under receiver.test answer what each test needs.
const DNS: Record<string, string[]> = {
  "hooks.receiver.test": ["93.184.215.14"],
  "other.receiver.test": ["93.184.215.15"],
  "v6.receiver.test": ["2606:4700:4700::1111", "1.1.1.1"],
  "internal.receiver.test": ["10.0.0.7"],
  "metadata.receiver.test": ["169.254.169.254"],
  "ula.receiver.test": ["fd00::1"],
  "mapped.receiver.test": ["::ffff:127.0.0.1"],
  "rebind.receiver.test": ["93.184.215.14", "127.0.0.1"],
  "empty.receiver.test": [],
};
/** Every name the stand-in resolved, in order. */
export const resolved: string[] = [];
export const resolve: Resolver = async (hostname) => {
  resolved.push(hostname);
  const addresses = DNS[hostname];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return addresses;
};

let platform: Platform;
/** WEBHOOK_ALLOW_INSECURE_TARGETS=false */
export let strict: StartedService<ServiceApp>;
/** WEBHOOK_ALLOW_INSECURE_TARGETS=true */
export let dev: StartedService<ServiceApp>;
export let client: ReturnType<typeof strict.client<typeof WebhookService>>;
export let devClient: ReturnType<typeof dev.client<typeof WebhookService>>;

export function useWebhookSuite(): void {
  beforeAll(async () => {
    // One grant.revoked consumer is enough (the in-process bus, when NATS is absent, takes one per name).
    platform = await startPlatform({
      token: TOKEN,
      organisation: false,
      webhook: {
        create: (deps) => createWebhookApp(deps, { resolve, consumeGrantRevoked: false }),
        config: { WEBHOOK_ALLOW_INSECURE_TARGETS: "false" },
      },
    });
    strict = platform.webhook;
    dev = await platform.startService(
      (deps) => createWebhookApp(deps, { resolve }),
      platform.configWith({ WEBHOOK_ALLOW_INSECURE_TARGETS: "true" }),
    );
    client = strict.client(WebhookService);
    devClient = dev.client(WebhookService);
  });

  afterAll(async () => {
    await platform?.stop();
  });
}

export const newPair = (clientId = `client-${randomUUID().slice(0, 8)}`): Owner =>
  ({ organisationId: randomUUID(), clientId }) as Owner;

export async function listAll(owner: Owner) {
  return (await client.listSubscriptions({ owner, pageSize: 100 })).subscriptions;
}
