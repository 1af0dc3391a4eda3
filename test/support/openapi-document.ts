// The gateway's OpenAPI document without a running platform: a gateway in
// front of service URLs nobody listens on (the document needs no RPC).
import type { FastifyInstance } from "fastify";
import { buildGateway, type GatewayOptions } from "../../gateway/app.js";
import { createServiceClients } from "../../gateway/clients.js";
import { createLogger } from "../../services/shared/logger.js";
import { testConfig } from "./backends.js";

/** `before`: what to add (hooks) before the gateway is made ready. */
export async function documentGateway(
  publicUrl = "https://bizcard.test",
  extra: Partial<GatewayOptions> = {},
  before?: (app: FastifyInstance) => void,
): Promise<FastifyInstance> {
  const config = testConfig({ INTERNAL_RPC_TOKEN: "x".repeat(32) });
  const app = await buildGateway({
    clients: createServiceClients(config),
    serviceUrls: {},
    logger: createLogger("openapi-test", "silent"),
    publicUrl,
    ...extra,
  });
  before?.(app);
  await app.ready();
  return app;
}
