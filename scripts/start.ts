// `npm start`: the whole platform in one process, on the embedded default (PGlite under DATA_DIR, an
// in-process bus) when DATABASE_URL and NATS_URL are unset, else on PostgreSQL and NATS JetStream. Each
// service still listens on its own loopback RPC port (the CLI uses it); calls between them stay in memory.
// package.json runs it compiled (run-compiled.mjs) with `exec`, so that the signal npm forwards
// (`kill <npm pid>`) reaches node itself rather than a shell that would leave node running.
import { existsSync } from "node:fs";
import path from "node:path";
import { buildGateway, gatewayRegistration, gatewayTimeouts } from "../gateway/app.js";
import { createServiceClients, serviceUrls } from "../gateway/clients.js";
import { createAuthApp } from "../services/auth/auth-app.js";
import { createDeliveryApp } from "../services/delivery/delivery-app.js";
import { createOrganisationApp } from "../services/organisation/organisation-app.js";
import {
  exitOnConfigError,
  loadConfigOrExit,
  withInternalTokens,
  withSecretEncryptionKeys,
  type Config,
} from "../services/shared/config.js";
import { EMBEDDED_POOL_MAX } from "./embedded/embedded-postgres.js";
import { openBus } from "../services/shared/event-bus/open-bus.js";
import { createLogger } from "../services/shared/logger.js";
import { serveInProcess } from "../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../services/shared/rpc/server.js";
import type { ServiceApp } from "../services/shared/service-app.js";
import { PortInUseError, checkPortsFree, exitIfPortInUse, listenOn } from "../services/shared/port-in-use.js";
import { alreadyRunning } from "./already-running.js";
import { DEMO_FILE, createDemo, demoSignIn } from "./demo-data.js";
import { makePrivateFolder } from "./private-folder.js";
import { startMetricsListener, type MetricsListener } from "../services/shared/metrics/metrics-listener.js";
import { onShutdown } from "../services/shared/service-main.js";
import { startTracing } from "../services/shared/trace/tracing.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import type { FastifyInstance } from "fastify";
import { createWebhookApp } from "../services/webhook/webhook-app.js";
import { OrganisationEntity } from "../services/organisation/organisations/organisation.entity.js";
import type { MikroORM } from "@mikro-orm/postgresql";
import { internalToken } from "./internal-token.js";
import { webhookSecretKey } from "./webhook-secret-key.js";
import { startPlatformDatabases, type PlatformDatabases } from "./embedded-databases.js";

// Consumers first, publishers last: a relay never publishes before its consumers listen.
const SERVICES = [
  { name: "delivery", create: createDeliveryApp, port: "DELIVERY_RPC_PORT" },
  { name: "webhook", create: createWebhookApp, port: "WEBHOOK_RPC_PORT" },
  { name: "auth", create: createAuthApp, port: "AUTH_RPC_PORT" },
  { name: "organisation", create: createOrganisationApp, port: "ORGANISATION_RPC_PORT" },
] as const;

type PortVariable = (typeof SERVICES)[number]["port"] | "GATEWAY_PORT" | "GATEWAY_METRICS_PORT";
const listenAt = (config: Config, variable: PortVariable, host: string) => ({ variable, host, port: config[variable] });

async function main(): Promise<void> {
  let config = loadConfigOrExit();
  const logger = createLogger("bizcard", config.LOG_LEVEL);
  // Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set.
  const tracing = await startTracing("bizcard");
  const embeddedDb = !config.DATABASE_URL;
  const dataDir = path.resolve(config.DATA_DIR);
  // The data folder is the owner's only, narrowed again if found wider: it holds the credentials
  // and, embedded, the databases with their WAL. What this process writes later is owner-only too.
  if (embeddedDb) process.umask(0o077);
  await makePrivateFolder(dataDir);
  // The demo is made once per embedded data folder (DEMO_FILE marks it), and on real PostgreSQL
  // when the database has no organisation yet.
  const freshDataDir = embeddedDb && !existsSync(path.join(dataDir, DEMO_FILE));
  if (config.INTERNAL_RPC_TOKEN.length === 0) config = withInternalTokens(config, [await internalToken(dataDir)]);
  // As the credential: one key per data folder for the webhook signing secrets, kept beside it.
  if (config.WEBHOOK_SECRET_ENCRYPTION_KEY.length === 0) {
    const key = await webhookSecretKey(dataDir).catch(exitOnConfigError);
    config = withSecretEncryptionKeys(config, [Buffer.from(key, "base64")]);
  }

  let embedded: PlatformDatabases | undefined;
  const apps: ServiceApp[] = [];
  const servers: RunningServer[] = [];
  let bus: EventBus | undefined;
  let gateway: FastifyInstance | undefined;
  let metrics: MetricsListener | undefined;
  const undoInProcess: (() => void)[] = [];
  const stop = async () => {
    await metrics?.close();
    await gateway?.close();
    // No more in-memory calls into services that are closing.
    for (const undo of undoInProcess) undo();
    await Promise.allSettled(servers.map((s) => s.close()));
    for (const app of [...apps].reverse()) await app.close().catch((err) => logger.error({ err }, "close failed"));
    await bus?.close();
    for (const db of embedded?.databases ?? []) await db.close();
    await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "spans not exported"));
  };
  // Signals are handled from the first moment: a stop during start closes what is open so far.
  onShutdown(logger, async () => {
    await stop();
    process.stdout.write("bizcard platform stopped\n");
  });

  try {
    // A port another process holds is found before anything slow starts.
    const gatewayAt = listenAt(config, "GATEWAY_PORT", config.GATEWAY_HOST);
    const metricsAt = listenAt(config, "GATEWAY_METRICS_PORT", config.RPC_HOST);
    await checkPortsFree([...SERVICES.map((svc) => listenAt(config, svc.port, config.RPC_HOST)), gatewayAt, metricsAt]);
    if (config.NATS_URL) progress(`connecting to NATS at ${config.NATS_URL}`);
    bus = await openBus(config, "bizcard", logger);
    const names = SERVICES.map((svc) => svc.name);
    if (embeddedDb) embedded = await startPlatformDatabases(dataDir, names, progress, logger);
    for (const svc of SERVICES) {
      const log = createLogger(svc.name, config.LOG_LEVEL);
      progress(`starting ${svc.name}${config.MIGRATE_ON_START ? ": migrating its schema" : ""}`);
      const app = await svc.create({
        config,
        databaseUrl: embedded?.urls[svc.name] ?? config.DATABASE_URL!,
        databasePoolMax: embedded ? EMBEDDED_POOL_MAX : config.DATABASE_POOL_MAX,
        bus,
        logger: log,
      });
      apps.push(app);
      const listen = listenAt(config, svc.port, config.RPC_HOST);
      const server = await listenOn(listen, () =>
        startRpcServer({
          name: svc.name,
          host: listen.host,
          port: listen.port,
          routes: app.routes,
          logger: log,
          internalTokens: config.INTERNAL_RPC_TOKEN,
          readiness: app.readiness,
        }),
      );
      servers.push(server);
      // Calls between the services of this process stay in memory, under the URL their clients use.
      undoInProcess.push(serveInProcess(serviceUrls(config)[svc.name], server.inProcess));
    }
    progress("starting the background work (outbox relays, event consumers, delivery)");
    for (const app of apps) await app.start();

    // Demo data first: once /readyz answers 200, everything printed here is true.
    const emptyDatabase = !embeddedDb && (await hasNoOrganisation(apps));
    const why = freshDataDir ? "fresh data folder" : emptyDatabase ? "empty database" : "";
    if (why) progress("creating the demo organisation, member and client");
    const demo = why ? await createDemo(config, dataDir, why) : await demoSignIn(config, dataDir);
    progress("starting the gateway");
    gateway = await buildGateway({
      clients: createServiceClients(config),
      serviceUrls: serviceUrls(config),
      logger: createLogger("gateway", config.LOG_LEVEL),
      trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
      timeouts: gatewayTimeouts(config),
      // Revocations reach the gateway's bearer cache on the same bus as the services'.
      bus,
      publicUrl: config.publicUrl,
      bearerCacheMs: config.BEARER_CACHE_MS,
      registration: gatewayRegistration(config),
      mcpAllowedOrigins: config.MCP_ALLOWED_ORIGINS,
    });
    await listenOn(gatewayAt, () => gateway!.listen({ host: gatewayAt.host, port: gatewayAt.port }));
    // Every service's metrics and the gateway's: one process, one registry, on an internal port.
    metrics = await listenOn(metricsAt, () => startMetricsListener(metricsAt.host, metricsAt.port));

    const backends = `${embeddedDb ? `PGlite in ${dataDir}` : "PostgreSQL"}, ${bus.kind === "nats" ? "NATS JetStream" : "in-process bus"}`;
    process.stdout.write(
      `\nbizcard platform ready (${backends})\n  gateway: http://${config.GATEWAY_HOST}:${config.GATEWAY_PORT}\n  issuer (PUBLIC_URL): ${config.publicUrl}\n${developmentSettings(config)}${demo}\n`,
    );
  } catch (err) {
    if (!(err instanceof PortInUseError)) logger.fatal({ err }, "start failed");
    await stop().catch(() => {});
    const running = await alreadyRunning(err, { host: config.GATEWAY_HOST, port: config.GATEWAY_PORT });
    if (running) process.stderr.write(`${running}\n`);
    else exitIfPortInUse("bizcard", err);
    process.exit(1);
  }
}

/** What a start is doing, on stdout beside the banner, so that a cold start is not silent before "ready". */
const progress = (step: string) => void process.stdout.write(`bizcard: ${step}\n`);

/**
 * Settings that loosen what production must refuse, named in the banner when
 * on (`npm run dev`), so that nobody runs them unknowingly.
 */
const DEVELOPMENT_SETTINGS = [
  ["WEBHOOK_ALLOW_INSECURE_TARGETS", "http, loopback and private webhook targets (never in production)"],
  ["OAUTH_ALLOW_INSECURE_REDIRECTS", "http redirect URIs on any host (never in production)"],
  ["OAUTH_DYNAMIC_REGISTRATION", "anyone may register a client (in production only on purpose)"],
] as const;

function developmentSettings(config: Config): string {
  const on = DEVELOPMENT_SETTINGS.filter(([name]) => config[name]);
  if (on.length === 0) return "";
  const width = Math.max(...on.map(([name]) => name.length));
  const lines = on.map(([name, meaning]) => `    ${`${name}=true`.padEnd(width + 5)}  ${meaning}`);
  return `  development settings on:\n${lines.join("\n")}\n`;
}

/** Real PostgreSQL: no organisation at all (a new deployment's database, not one in use). */
async function hasNoOrganisation(apps: ServiceApp[]): Promise<boolean> {
  const organisation = apps.find((app) => app.name === "organisation") as ServiceApp & { orm?: MikroORM };
  if (!organisation?.orm) return false;
  return (await organisation.orm.em.fork().count(OrganisationEntity, {})) === 0;
}

await main();
