// The gateway as its own process.
import { loadConfigOrExit, requireInternalToken } from "../services/shared/config.js";
import { createLogger } from "../services/shared/logger.js";
import { onShutdown } from "../services/shared/service-main.js";
import { exitIfPortInUse, listenOn } from "../services/shared/port-in-use.js";
import { buildGateway, gatewayTimeouts } from "./app.js";
import { createServiceClients, serviceUrls } from "./clients.js";

const config = loadConfigOrExit([requireInternalToken]);
const logger = createLogger("gateway", config.LOG_LEVEL);
const app = await buildGateway({
  clients: createServiceClients(config),
  serviceUrls: serviceUrls(config),
  logger,
  trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
  timeouts: gatewayTimeouts(config),
  publicUrl: config.publicUrl,
});
const listen = { variable: "GATEWAY_PORT", host: config.GATEWAY_HOST, port: config.GATEWAY_PORT };
await listenOn(listen, () => app.listen({ host: listen.host, port: listen.port })).catch((err) => {
  exitIfPortInUse("gateway", err);
  throw err;
});
onShutdown(logger, () => app.close());
