// The MCP server of one request (the endpoint is stateless: every POST gets
// a new server and transport, route.ts): the platform's tools, acting for
// the request's token.
import type { Client } from "@connectrpc/connect";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { DeliveryService } from "../../gen/bizcard/delivery/v1/delivery_pb.js";
import type { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import type { WebhookService } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Bearer } from "../bearer.js";
import { organisationTools } from "./organisation-tools.js";
import type { ToolContext } from "./tool-results.js";
import { webhookTools } from "./webhook-tools.js";

export const SERVER_NAME = "bizcard";

export interface McpServerDeps {
  /** The platform's version (package.json), as the server's implementation version. */
  version: string;
  bearer: Bearer;
  organisations: Client<typeof OrganisationService>;
  webhook: Client<typeof WebhookService>;
  delivery: Client<typeof DeliveryService>;
}

const INSTRUCTIONS =
  "Tools of one bizcard organisation (the one this connection was authorised for): its contacts and this application's webhook subscriptions.";

export function createMcpServer(deps: McpServerDeps, context: ToolContext): McpServer {
  const server = new McpServer(
    { name: SERVER_NAME, version: deps.version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  );
  organisationTools(server, context, deps.bearer, deps.organisations);
  webhookTools(server, context, deps.webhook, deps.delivery);
  return server;
}
