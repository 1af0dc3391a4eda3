import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { onRealPostgres, openServiceDatabase, pingDatabase } from "../shared/database.js";
import { runChecks } from "../shared/rpc/health.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import type { Consumer } from "../shared/event-bus/event-bus.js";
import { targetResolver, type Resolver } from "../shared/net/dns-resolver.js";
import { announceSubscriptionsChanged } from "../shared/event-bus/subscriptions-changed.js";
import { consumeGrantRevoked } from "./grant-revoked-consumer.js";
import { webhookMigrations } from "./migrations/index.js";
import { SubscriptionEndEntity } from "./subscriptions/subscription-end.entity.js";
import { SubscriptionEntity } from "./subscriptions/subscription.entity.js";
import { startPruning } from "../shared/prune/prune-loop.js";
import { WEBHOOK_SCHEMA, createWebhookService } from "./webhook-service.js";
import { requireSecretEncryptionKey } from "../shared/config.js";
import { secretBox } from "./subscriptions/secret-box.js";

/** Every table of the webhook schema (schema-diff test: entities == migrations). */
export const WEBHOOK_ENTITIES = [SubscriptionEntity, SubscriptionEndEntity];

interface WebhookAppOptions {
  /** How target_url hostnames are resolved; unset: the target resolver, as at delivery time. */
  resolve?: Resolver;
  /** Consume grant.revoked (default true; the in-process bus takes one consumer per durable name). */
  consumeGrantRevoked?: boolean;
}

export async function createWebhookApp(deps: ServiceAppDeps, options: WebhookAppOptions = {}): Promise<ServiceApp> {
  const { config, bus, logger } = deps;
  // Before anything opens: no key, no service (a secret is never stored in clear).
  requireSecretEncryptionKey(config);
  const secrets = secretBox(config.WEBHOOK_SECRET_ENCRYPTION_KEY);
  const schema = { schema: WEBHOOK_SCHEMA, entities: WEBHOOK_ENTITIES, migrations: webhookMigrations };
  const orm = await openServiceDatabase(deps, schema);
  // One flag for http and private destinations: development and tests turn it on.
  const allowInsecure = config.WEBHOOK_ALLOW_INSECURE_TARGETS;
  if (allowInsecure) logger.warn("WEBHOOK_ALLOW_INSECURE_TARGETS is on: http and private target URLs are accepted");
  const timeoutMs = config.WEBHOOK_DNS_TIMEOUT_MS;
  const service = createWebhookService({
    orm,
    allowInsecureTargets: allowInsecure,
    resolve: options.resolve ?? targetResolver({ timeoutMs, servers: config.WEBHOOK_DNS_SERVERS, allowInsecure }),
    resolveTimeoutMs: timeoutMs,
    maxSubscriptionsPerPair: config.WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR,
    secretOverlapSeconds: config.WEBHOOK_SECRET_OVERLAP_SECONDS,
    secrets,
    changed: (organisationId) => announceSubscriptionsChanged(bus, organisationId, logger),
    preparedStatements: onRealPostgres(deps),
  });
  let grantRevoked: Consumer | undefined;
  let pruning: { stop(): Promise<void> } | undefined;
  return {
    name: "webhook",
    routes: (router) => router.service(WebhookService, service),
    readiness: () => runChecks({ database: () => pingDatabase(orm) }, { bus: () => bus.ping() }),
    start: async () => {
      // The ends of deleted subscriptions, after the time the delivery service keeps the log they explain.
      const where = `t."ended_at" < now() - (? * interval '1 day')`;
      const params = [config.DELIVERY_LOG_RETENTION_DAYS];
      const ends = { name: "subscription ends", table: `"${WEBHOOK_SCHEMA}"."subscription_end"`, where, params };
      pruning = startPruning({ orm, targets: () => [ends], settings: config, logger });
      if (options.consumeGrantRevoked !== false) grantRevoked = await consumeGrantRevoked({ bus, orm, logger });
    },
    close: async () => {
      await grantRevoked?.stop();
      await pruning?.stop();
      await orm.close();
    },
  };
}
