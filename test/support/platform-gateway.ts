// A gateway of the test platform (platform.ts) in front of its services, built
// as gateway/main.ts builds it, listening on a loopback port, and every answer
// it gives checked against its OpenAPI document.
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { buildGateway, gatewayRegistration, type GatewayOptions } from "../../gateway/app.js";
import { createServiceClients } from "../../gateway/clients.js";
import type { Config } from "../../services/shared/config.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { openBus } from "../../services/shared/event-bus/open-bus.js";
import { createLogger, type Logger } from "../../services/shared/logger.js";
import { checkAnswersAgainstDocument } from "./openapi-hook.js";

export interface GatewayChoice {
  /** Config values of the gateway only. */
  config?: Record<string, string>;
  /**
   * Listen on the port PUBLIC_URL names (http://127.0.0.1:<free port>), the
   * issuer the auth service and the gateway agree on: iss and the session
   * cookie then match the address the client uses.
   */
  publicUrlPort?: boolean;
  /** Pass the bus (revocations; the bearer cache), PUBLIC_URL and BEARER_CACHE_MS, as main.ts does. */
  bus?: boolean;
  /** For /readyz: service name -> RPC URL; every started service by default. */
  serviceUrls?: Record<string, string>;
  logger?: GatewayOptions["logger"];
  /** GATEWAY_TRUSTED_PROXIES: peers whose X-Forwarded-For the gateway believes. */
  trustedProxies?: GatewayOptions["trustedProxies"];
}

export interface RunningGateway {
  app: FastifyInstance;
  /** http://127.0.0.1:<port> */
  base: string;
  config: Config;
  close(): Promise<void>;
}

/** A gateway as addGateway() asks for it: the choice, and its timeouts, bus and logger name. */
export type GatewayRequest = GatewayChoice & { timeouts?: GatewayOptions["timeouts"]; ownBus?: boolean; name?: string };

/** Where a gateway stands: the platform's bus and logger, its services' RPC URLs, and its running gateways. */
export interface GatewayPlace {
  bus: EventBus;
  logger: Logger;
  urls: Record<string, string>;
  /** A gateway joins it once it listens and leaves it when closed. */
  gateways: RunningGateway[];
}

/** A gateway of `config` listening on `port` (0: any free one); what it opened is closed again when it cannot listen. */
export async function listenTestGateway(
  g: GatewayRequest,
  config: Config,
  port: number,
  { bus, logger, urls, gateways }: GatewayPlace,
): Promise<RunningGateway> {
  const gatewayLogger = g.logger ?? (g.name ? createLogger(g.name, config.LOG_LEVEL) : logger);
  // ownBus: a bus connection of its own, as a second gateway process has (on NATS).
  const gatewayBus = g.ownBus && bus.kind === "nats" ? await openBus(config, g.name ?? "gateway", gatewayLogger) : bus;
  const app = await buildGateway({
    clients: createServiceClients(config),
    serviceUrls: g.serviceUrls ?? { ...urls },
    registration: gatewayRegistration(config),
    mcpAllowedOrigins: config.MCP_ALLOWED_ORIGINS,
    logger: gatewayLogger,
    ...(g.timeouts ? { timeouts: g.timeouts } : {}),
    ...(g.trustedProxies ? { trustedProxies: g.trustedProxies } : {}),
    ...(g.bus || g.ownBus ? { bus: gatewayBus, bearerCacheMs: config.BEARER_CACHE_MS } : {}),
    ...(g.bus || g.ownBus || config.PUBLIC_URL ? { publicUrl: config.publicUrl } : {}),
  });
  // Every answer is checked against the gateway's OpenAPI document.
  checkAnswersAgainstDocument(app);
  const running: RunningGateway = {
    app,
    base: "",
    config,
    close: async () => {
      const i = gateways.indexOf(running);
      if (i >= 0) gateways.splice(i, 1);
      await app.close();
      if (gatewayBus !== bus) await gatewayBus.close();
    },
  };
  try {
    await app.listen({ port, host: "127.0.0.1" });
  } catch (err) {
    await running.close();
    throw err;
  }
  gateways.push(running);
  running.base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return running;
}
