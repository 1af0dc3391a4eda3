// GET /metrics after real traffic through the platform: every family the
// operator is promised is there, the ones the traffic touched have moved, the
// labels are bounded (route templates, codes; no ids), and the public gateway
// port does not serve it.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { AuthService, AuthorizationParametersSchema } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { EventType } from "../../gen/bizcard/events/v1/events_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService, type Owner } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";
import { waitFor } from "../support/processes.js";
import { startReceiver, type Receiver } from "../support/receiver.js";

const TOKEN = "m".repeat(40);
let platform: Platform;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  platform = await startPlatform({
    token: TOKEN,
    config: {
      WEBHOOK_ALLOW_INSECURE_TARGETS: "true",
      // The failing receiver's delivery: four attempts over about 1.4 s (at least 1.1 s with the jitter),
      // then given up, and its subscription disabled at the fourth failure, not before, however slow the machine.
      DELIVERY_RETRY_SCHEDULE_SECONDS: "0.2,0.6,0.6",
      WEBHOOK_DISABLE_AFTER_FAILURES: "4",
      WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: "1",
      DELIVERY_TIMEOUT_MS: "1000",
      DELIVERY_POLL_MS: "50",
      RATE_LIMIT_CLIENT_AUTH_FAILURES: "2",
    },
    auth: true,
    webhook: true,
    delivery: true,
    gateway: true,
  });
}, 60_000);

afterAll(async () => {
  await platform?.stop();
  await receiver?.close();
});

/** The scrape, as a Prometheus server would read it, from a service's RPC port. */
async function scrape(): Promise<string> {
  const res = await fetch(`${platform.auth.server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one series (name{labels} exactly as exposed, labels in declaration order), 0 when absent. */
function value(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const form = (params: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(params).toString(),
});

describe("GET /metrics", () => {
  it("after tokens, errors, refusals, contacts and deliveries, every family is there and the touched ones moved", async () => {
    const before = await scrape();
    const orgs = platform.organisation.client(OrganisationService);
    const hooks = platform.webhook.client(WebhookService);
    const ownerEmail = `${randomUUID()}@metrics.test`;
    const org = await orgs.createOrganisation({ name: "Metrics Org", ownerEmail, ownerPassword: "correct horse" });
    const organisationId = org.organisation!.id;
    const client = await platform.createClient("Metrics App", ["https://app.example/cb"], {
      grantTypes: ["client_credentials"],
      ownerOrganisationId: organisationId,
    });

    // One token issued, one invalid_client, then the client-auth limit refuses.
    const ok = await fetch(
      `${platform.base}/oauth/token`,
      form({ grant_type: "client_credentials", client_id: client.clientId, client_secret: client.clientSecret }),
    );
    expect(ok.status).toBe(200);
    const bad = { grant_type: "client_credentials", client_id: client.clientId, client_secret: "wrong" };
    expect((await fetch(`${platform.base}/oauth/token`, form(bad))).status).toBe(401);
    let refused = 0;
    for (let i = 0; i < 4 && refused === 0; i++)
      if ((await fetch(`${platform.base}/oauth/token`, form(bad))).status === 429) refused++;
    expect(refused).toBe(1);
    // A member's login with a wrong password.
    const web = await platform.createClient("Metrics Web", ["https://app.example/cb"]);
    const authRpc = platform.auth.client(AuthService);
    const parameters = create(AuthorizationParametersSchema, {
      responseType: "code",
      clientId: web.clientId,
      redirectUri: "https://app.example/cb",
      state: "s",
    });
    const { interactionId } = await authRpc.startAuthorization({ parameters });
    const { interaction } = await authRpc.getInteraction({ interactionId });
    await expect(
      authRpc.login({
        interactionId,
        csrfToken: interaction!.csrfToken,
        email: ownerEmail,
        password: "wrong horse",
        remoteAddress: "192.0.2.9",
      }),
    ).rejects.toThrow(/wrong/);
    // A route with a path parameter: its template is the label, never the id.
    const subscriptionId = randomUUID();
    expect((await fetch(`${platform.base}/oauth/webhooks/subscriptions/${subscriptionId}`)).status).toBe(401);
    // A path no route matches is one label, whatever the path.
    expect((await fetch(`${platform.base}/no/such/${subscriptionId}`)).status).toBe(404);

    // A contact created (an outbox row, published) reaches one receiver that answers 200 and one that answers 500.
    const good = receiver.route(`/hooks/${randomUUID()}`);
    const failing = receiver.route(`/hooks/${randomUUID()}`, () => ({ status: 500 }));
    for (const [i, route] of [good, failing].entries()) {
      const owner = { organisationId, clientId: `metrics-${i}` } as Owner;
      await hooks.createSubscription({ owner, targetUrl: route.url, eventType: EventType.CONTACT_CREATED });
    }
    await orgs.createContact({
      organisationId,
      fields: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.test", company: "Engines" },
    });
    await waitFor(
      () => (good.requests.length >= 1 && failing.requests.length >= 4 ? true : undefined),
      30_000,
      "both deliveries",
    );
    // The failing one gives up after its last retry, and its subscription is disabled.
    const after = await waitFor(
      async () => {
        const text = await scrape();
        const series = "webhook_subscriptions_disabled_total";
        return value(text, series) > value(before, series) ? text : undefined;
      },
      30_000,
      "the disable",
    );

    const moved = (series: string) => expect(value(after, series), series).toBeGreaterThan(value(before, series));
    moved("oauth_login_failures_total");
    moved("webhook_deliveries_given_up_total");
    moved('oauth_tokens_issued_total{grant_type="client_credentials"}');
    moved('oauth_token_errors_total{error="invalid_client"}');
    moved('rate_limit_refusals_total{limit="client"}');
    moved('webhook_delivery_attempts_total{outcome="succeeded"}');
    moved('webhook_delivery_attempts_total{outcome="failed"}');
    moved("webhook_delivery_attempt_duration_seconds_count");
    moved('http_server_request_duration_seconds_count{method="POST",route="/oauth/token",status="200"}');
    moved(
      'http_server_request_duration_seconds_count{method="GET",route="/oauth/webhooks/subscriptions/:id",status="401"}',
    );
    moved('http_server_request_duration_seconds_count{method="GET",route="unmatched",status="404"}');
    moved('rpc_server_duration_seconds_count{service="organisation",method="CreateContact",code="ok"}');
    moved('rpc_server_duration_seconds_count{service="auth",method="ExchangeToken",code="ok"}');
    // Published: nothing of the organisation's outbox is left unsent.
    await waitFor(
      async () => (value(await scrape(), 'outbox_pending_events{service="organisation"}') === 0 ? true : undefined),
      10_000,
      "the outbox drained",
    );
    expect(after).toMatch(/^outbox_oldest_pending_age_seconds\{service="organisation"\} /m);
    expect(after).toMatch(/^outbox_pending_events\{service="auth"\} /m);
    expect(after).toMatch(/^webhook_deliveries_due \d/m);
    // The delivery fan-out's durable consumer on NATS has taken every event (the in-process bus has no broker to ask).
    if (platform.bus.kind === "nats")
      expect(after).toMatch(/^eventbus_consumer_pending_messages\{consumer="[a-z0-9_-]+"\} 0$/m);

    for (const family of [
      "http_server_request_duration_seconds histogram",
      "rpc_server_duration_seconds histogram",
      "oauth_tokens_issued_total counter",
      "oauth_token_errors_total counter",
      "oauth_login_failures_total counter",
      "rate_limit_refusals_total counter",
      "outbox_pending_events gauge",
      "outbox_oldest_pending_age_seconds gauge",
      "eventbus_consumer_pending_messages gauge",
      "webhook_delivery_attempts_total counter",
      "webhook_delivery_attempt_duration_seconds histogram",
      "webhook_deliveries_due gauge",
      "webhook_deliveries_given_up_total counter",
      "webhook_subscriptions_disabled_total counter",
      "process_cpu_seconds_total counter",
      "process_resident_memory_bytes gauge",
      "nodejs_eventloop_lag_seconds gauge",
    ]) {
      expect(after, family).toContain(`# TYPE ${family}\n`);
    }

    // Bounded labels: no id, client id, organisation or raw path anywhere.
    for (const id of [subscriptionId, client.clientId, organisationId, good.url, failing.url])
      expect(after).not.toContain(id);
    expect(after).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
  }, 90_000);

  it("is served by every service's RPC port, without the internal credential, and not on the public gateway port", async () => {
    for (const service of [platform.auth, platform.organisation, platform.webhook, platform.delivery]) {
      const res = await fetch(`${service.server.url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("# TYPE rpc_server_duration_seconds histogram");
    }
    const res = await fetch(`${platform.base}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain("# TYPE");
  });
});
