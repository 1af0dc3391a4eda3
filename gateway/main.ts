// The gateway as its own process. With NATS_URL it listens on the bus for
// revocations and caches bearer checks (bearer-cache.ts); without it, every
// bearer check is one RPC to the auth service.
import { GATEWAY_PROCESS_CHECKS, loadConfigOrExit } from "../services/shared/config.js";
import { openBus } from "../services/shared/event-bus/open-bus.js";
import { createLogger } from "../services/shared/logger.js";
import { startMetricsListener } from "../services/shared/metrics/metrics-listener.js";
import { onShutdown } from "../services/shared/service-main.js";
import { startTracing } from "../services/shared/trace/tracing.js";
import { exitIfPortInUse, listenOn } from "../services/shared/port-in-use.js";
import { buildGateway, gatewayRegistration, gatewayTimeouts } from "./app.js";
import { createServiceClients, serviceUrls } from "./clients.js";

const config = loadConfigOrExit(GATEWAY_PROCESS_CHECKS);
const logger = createLogger("gateway", config.LOG_LEVEL);
// Spans are exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or …_TRACES_ENDPOINT) is set.
const tracing = await startTracing("gateway");
// The in-process bus would hear nothing in a process of its own: no bus, no bearer cache.
const bus = config.NATS_URL ? await openBus(config, "gateway", logger) : undefined;
if (!bus) logger.info("NATS_URL is unset: bearer checks are not cached (each one is an RPC to the auth service)");
const app = await buildGateway({
  clients: createServiceClients(config),
  serviceUrls: serviceUrls(config),
  logger,
  trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
  timeouts: gatewayTimeouts(config),
  bus,
  publicUrl: config.publicUrl,
  bearerCacheMs: config.BEARER_CACHE_MS,
  registration: gatewayRegistration(config),
  mcpAllowedOrigins: config.MCP_ALLOWED_ORIGINS,
});
const orExit = (err: unknown) => {
  exitIfPortInUse("gateway", err);
  throw err;
};
const listen = { variable: "GATEWAY_PORT", host: config.GATEWAY_HOST, port: config.GATEWAY_PORT };
await listenOn(listen, () => app.listen({ host: listen.host, port: listen.port })).catch(orExit);
// Metrics on an internal port (RPC_HOST), never the public one.
const metricsListen = { variable: "GATEWAY_METRICS_PORT", host: config.RPC_HOST, port: config.GATEWAY_METRICS_PORT };
const metrics = await listenOn(metricsListen, () => startMetricsListener(metricsListen.host, metricsListen.port)).catch(
  orExit,
);
onShutdown(logger, async () => {
  await metrics.close();
  await app.close();
  await bus?.close();
  await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "spans not exported"));
});
