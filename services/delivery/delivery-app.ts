import { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import { onRealPostgres, openServiceDatabase, pingDatabase } from "../shared/database.js";
import type { Consumer } from "../shared/event-bus/event-bus.js";
import { targetResolver, type Resolver } from "../shared/net/dns-resolver.js";
import { createRpcClient } from "../shared/rpc/client.js";
import * as metrics from "../shared/metrics/metrics.js";
import { addSource } from "../shared/metrics/scrape-sources.js";
import { runChecks } from "../shared/rpc/health.js";
import type { ServiceApp, ServiceAppDeps } from "../shared/service-app.js";
import { inFlightNow } from "./deliveries/delivery-claim.js";
import { createDeliveryStore } from "./deliveries/delivery-store.js";
import { createFailureStreak } from "./deliveries/failure-streak.js";
import * as deliveryTables from "./deliveries/delivery.entity.js";
import { DELIVERY_SCHEMA, createDeliveryService } from "./delivery-service.js";
import { CONTACT_FAN_OUT_CONSUMER, consumeContactEvents } from "./fan-out/contact-fan-out.js";
import { deliveryMigrations } from "./migrations/index.js";
import type { PruneTarget } from "../shared/prune/batch-delete.js";
import { startPruning } from "../shared/prune/prune-loop.js";
import { createWebhookSender } from "./sender/webhook-sender.js";
import { SubscriberCache } from "./worker/subscriber-cache.js";
import { DeliveryWorker } from "./worker/delivery-worker.js";

/** Every table of the delivery schema (schema-diff test: entities == migrations). */
export const DELIVERY_ENTITIES = Object.values(deliveryTables);

/**
 * What is pruned past the retention: finished deliveries (a pending one stays whatever its age),
 * attempts by their own time, and event bodies no delivery refers to any more.
 */
function pruned(config: { DELIVERY_LOG_RETENTION_DAYS: number }): PruneTarget[] {
  const days = config.DELIVERY_LOG_RETENTION_DAYS;
  const before = (column: string) => `t."${column}" < now() - (? * interval '1 day')`;
  const target = (name: string, table: string, where: string) => {
    return { name, table: `"${DELIVERY_SCHEMA}"."${table}"`, where, params: [days] };
  };
  const unused = `not exists (select 1 from "${DELIVERY_SCHEMA}"."delivery" d where d."event_id" = t."event_id")`;
  return [
    target("deliveries", "delivery", `t."status" <> 'pending' and ${before("updated_at")}`),
    target("delivery attempts", "delivery_attempt", before("attempted_at")),
    target("delivery events", "delivery_event", `${before("created_at")} and ${unused}`),
  ];
}

interface DeliveryAppOptions {
  /** How target hostnames are resolved when connecting; tests inject one. */
  resolve?: Resolver;
  /** Run the JetStream fan-out (default true). */
  fanOut?: boolean;
  /** Run the workers (default true). */
  workers?: boolean;
}

export async function createDeliveryApp(deps: ServiceAppDeps, options: DeliveryAppOptions = {}): Promise<ServiceApp> {
  const { config, logger, bus } = deps;
  const schema = { schema: DELIVERY_SCHEMA, entities: DELIVERY_ENTITIES, migrations: deliveryMigrations };
  const orm = await openServiceDatabase(deps, schema);
  const store = createDeliveryStore(orm, {
    halvingWindowMs: config.DELIVERY_TIMEOUT_MS,
    prepared: onRealPostgres(deps),
  });
  const webhook = createRpcClient(WebhookService, {
    baseUrl: config.webhookRpcUrl,
    timeoutMs: config.RPC_TIMEOUT_MS,
    internalToken: config.internalToken,
  });
  const allowInsecure = config.WEBHOOK_ALLOW_INSECURE_TARGETS;
  const dns = { timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS, servers: config.WEBHOOK_DNS_SERVERS };
  if (allowInsecure)
    logger.warn("WEBHOOK_ALLOW_INSECURE_TARGETS is on: deliveries go to http and private destinations too");
  const sender = createWebhookSender({
    // The same resolver as the save-time check.
    resolve: options.resolve ?? targetResolver({ ...dns, allowInsecure }),
    allowInsecure,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
  });
  const cacheLogger = logger.child({ component: "subscriber-cache" });
  const subscriberCache = await SubscriberCache.open(bus, config.DELIVERY_SUBSCRIBER_CACHE_MS, cacheLogger);
  const worker = new DeliveryWorker({
    store,
    webhook,
    subscriberCache,
    sender,
    logger: logger.child({ component: "delivery-worker" }),
    schedule: config.DELIVERY_RETRY_SCHEDULE_SECONDS,
    retryAfterMaxSeconds: config.DELIVERY_RETRY_AFTER_MAX_SECONDS,
    concurrency: config.DELIVERY_CONCURRENCY,
    maxInFlightPerSubscription: config.WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION,
    pollMs: config.DELIVERY_POLL_MS,
    leaseSeconds: config.DELIVERY_CLAIM_LEASE_SECONDS,
    // The fan-out consumer's ack floor (every process fans out on one durable consumer).
    ...(bus.ackFloor ? { fanOutFloor: () => bus.ackFloor!(CONTACT_FAN_OUT_CONSUMER) } : {}),
    failureStreak: createFailureStreak({
      orm,
      store,
      webhook,
      logger: logger.child({ component: "failure-streak" }),
      periodSeconds: config.WEBHOOK_DISABLE_AFTER_FAILING_SECONDS,
      minFailures: config.WEBHOOK_DISABLE_AFTER_FAILURES,
    }),
  });
  // Gauges counted when scraped, each served by a partial index of the claim's.
  const dueSql = `select count(*)::int as "n" from "${DELIVERY_SCHEMA}"."delivery" where "status" = 'pending' and "next_attempt_at" <= now()`;
  const cap = config.WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION;
  const stopSources = [
    addSource(metrics.deliveriesDueSources, async () => [["", (await orm.em.fork().execute(dueSql))[0].n as number]]),
    addSource(metrics.deliveriesInFlightSources, async () => [["", (await inFlightNow(orm, cap)).deliveries]]),
    addSource(metrics.subscriptionsAtCapSources, async () => [["", (await inFlightNow(orm, cap)).subscriptionsAtCap]]),
  ];
  let fanOut: Consumer | undefined;
  let pruning: { stop(): Promise<void> } | undefined;
  return {
    name: "delivery",
    routes: (router) =>
      router.service(DeliveryService, createDeliveryService({ orm, store, webhook, onRetry: () => worker.wake() })),
    readiness: () => runChecks({ database: () => pingDatabase(orm), bus: () => bus.ping() }),
    start: async () => {
      if (options.workers !== false) worker.start();
      pruning = startPruning({ orm, targets: () => pruned(config), settings: config, logger });
      if (options.fanOut !== false)
        fanOut = await consumeContactEvents({
          bus,
          store,
          webhook,
          logger,
          onDeliveries: (ordered, subscriptions) => worker.fannedOut(ordered, subscriptions),
        });
    },
    close: async () => {
      for (const stop of stopSources) stop();
      await fanOut?.stop();
      await worker.stop();
      await subscriberCache.close();
      await pruning?.stop();
      await sender.close();
      await orm.close();
    },
  };
}
