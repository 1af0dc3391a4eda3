// The gateway's RPC clients, one per service.
import { AuthService } from "../gen/bizcard/auth/v1/auth_pb.js";
import { DeliveryService } from "../gen/bizcard/delivery/v1/delivery_pb.js";
import { OrganisationService } from "../gen/bizcard/organisation/v1/organisation_pb.js";
import { WebhookService } from "../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Config } from "../services/shared/config.js";
import { REQUEST_ID_HEADER } from "../services/shared/request-context.js";
import type { IncomingMessage } from "node:http";
import { createRpcClient } from "../services/shared/rpc/client.js";
import { traceHeaders } from "./trace.js";

export type ServiceClients = ReturnType<typeof createServiceClients>;

export function serviceUrls(config: Config) {
  return {
    auth: config.authRpcUrl,
    organisation: config.organisationRpcUrl,
    webhook: config.webhookRpcUrl,
    delivery: config.deliveryRpcUrl,
  };
}

export function createServiceClients(config: Config) {
  const urls = serviceUrls(config);
  const options = (baseUrl: string) => ({
    baseUrl,
    timeoutMs: config.RPC_TIMEOUT_MS,
    internalToken: config.internalToken,
  });
  return {
    auth: createRpcClient(AuthService, options(urls.auth)),
    organisation: createRpcClient(OrganisationService, options(urls.organisation)),
    webhook: createRpcClient(WebhookService, options(urls.webhook)),
    delivery: createRpcClient(DeliveryService, options(urls.delivery)),
  };
}

/** An RPC's options while serving a request: its request id and trace context, in headers. */
export function rpcOptions(request: { id: string; raw: IncomingMessage }): { headers: Record<string, string> } {
  return { headers: { [REQUEST_ID_HEADER]: request.id, ...traceHeaders(request.raw) } };
}
