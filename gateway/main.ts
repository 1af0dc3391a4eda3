// The gateway as its own process.
import { loadConfigOrExit, requireInternalToken } from "../services/shared/config.js";
import { createLogger } from "../services/shared/logger.js";
import { onShutdown } from "../services/shared/service-main.js";
import { buildGateway } from "./app.js";
import { createServiceClients, serviceUrls } from "./clients.js";

const config = loadConfigOrExit([requireInternalToken]);
const logger = createLogger("gateway", config.LOG_LEVEL);
const app = await buildGateway({
  clients: createServiceClients(config),
  serviceUrls: serviceUrls(config),
  logger,
  trustedProxies: config.GATEWAY_TRUSTED_PROXIES,
});
await app.listen({ host: config.GATEWAY_HOST, port: config.GATEWAY_PORT });
onShutdown(logger, () => app.close());
