// The process's metric families, on prom-client's one registry (a service,
// the gateway, or all of them under `npm start`). Labels are bounded sets
// only, never a raw path, an id or a tenant. Gauges that need a database read
// are computed when scraped, from the sources registered (scrape-sources.ts).
import client from "prom-client";
import { collectAll, type GaugeSource } from "./scrape-sources.js";

export const registry = client.register;

// The standard process metrics (CPU, memory, event loop lag, GC, handles).
client.collectDefaultMetrics({ register: registry });

/** One family, made once per process even if this module is loaded twice under different URLs. */
function once<T>(name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

const histogram = <L extends string>(c: client.HistogramConfiguration<L>) =>
  once(c.name, () => new client.Histogram(c));
const counter = <L extends string>(c: client.CounterConfiguration<L>) => once(c.name, () => new client.Counter(c));

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Observed on every gateway request; route is the template, never the raw path. */
export const httpRequestDuration = histogram({
  name: "http_server_request_duration_seconds",
  help: "Gateway HTTP requests by method, route template and status.",
  labelNames: ["method", "route", "status"] as const,
  buckets: LATENCY_BUCKETS,
});

/** Observed on every RPC a server answers (rpc/interceptors.ts), in memory as over HTTP. */
export const rpcServerDuration = histogram({
  name: "rpc_server_duration_seconds",
  help: "Connect RPCs served, by service, method and Connect code (ok on success).",
  labelNames: ["service", "method", "code"] as const,
  buckets: LATENCY_BUCKETS,
});

export const oauthTokensIssued = counter({
  name: "oauth_tokens_issued_total",
  help: "Tokens issued at the token endpoint, by grant type.",
  labelNames: ["grant_type"] as const,
});

export const oauthTokenErrors = counter({
  name: "oauth_token_errors_total",
  help: "Token endpoint error answers, by OAuth error code.",
  labelNames: ["error"] as const,
});

export const oauthLoginFailures = counter({
  name: "oauth_login_failures_total",
  help: "Member logins refused for a wrong email or password.",
});

export const rateLimitRefusals = counter({
  name: "rate_limit_refusals_total",
  help: "Requests refused by a failure limit, by limit.",
  labelNames: ["limit"] as const,
});

export const webhookAttempts = counter({
  name: "webhook_delivery_attempts_total",
  help: "Webhook POSTs made, by outcome (succeeded, failed, timeout, gone, refused).",
  labelNames: ["outcome"] as const,
});

export const webhookAttemptDuration = histogram({
  name: "webhook_delivery_attempt_duration_seconds",
  help: "How long each webhook POST took, to the end of the answer or the error.",
  buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
});

export const webhookGivenUp = counter({
  name: "webhook_deliveries_given_up_total",
  help: "Deliveries given up after their last retry.",
});

export const webhookSubscriptionsDisabled = counter({
  name: "webhook_subscriptions_disabled_total",
  help: "Subscriptions disabled because every attempt failed.",
});

/** A gauge read from its sources on each scrape: the set returned, where its sources register. */
function scrapedGauge(name: string, help: string, labelName?: string): Set<GaugeSource> {
  const sources = new Set<GaugeSource>();
  once(
    name,
    () =>
      new client.Gauge({
        name,
        help,
        labelNames: labelName ? [labelName] : [],
        async collect() {
          this.reset();
          for (const [label, value] of await collectAll(sources)) {
            if (labelName) this.set({ [labelName]: label }, value);
            else this.set(value);
          }
        },
      }),
  );
  return sources;
}

export const outboxPendingSources = scrapedGauge(
  "outbox_pending_events",
  "Outbox rows not yet published, by service.",
  "service",
);
export const outboxOldestSources = scrapedGauge(
  "outbox_oldest_pending_age_seconds",
  "Age of the oldest unpublished outbox row (0 when none), by service.",
  "service",
);
export const consumerPendingSources = scrapedGauge(
  "eventbus_consumer_pending_messages",
  "Messages on the bus not yet handled, by durable consumer.",
  "consumer",
);
export const deliveriesDueSources = scrapedGauge(
  "webhook_deliveries_due",
  "Pending deliveries whose next attempt is due now.",
);
export const deliveriesInFlightSources = scrapedGauge(
  "webhook_deliveries_in_flight",
  "Deliveries a worker holds now (claimed, lease running), in every delivery process.",
);
export const subscriptionsAtCapSources = scrapedGauge(
  "webhook_subscriptions_at_in_flight_cap",
  "Subscriptions with as many deliveries in flight as their cap allows (WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION, a cap lowered by throttling, 1 for an ordered one): a slow or hanging target.",
);

export async function scrape(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}
