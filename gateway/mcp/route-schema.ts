// The documentation (and the body's validation) of POST /mcp.
import { z } from "zod";
import { DEFAULT_ERROR, ErrorBody, HEADERS, bearerErrors, empty, error, json, needs } from "../schemas/common.js";
import { JsonRpcAnswer, JsonRpcBody, JsonRpcRefusal, initializeExample, toolResultExample } from "../schemas/mcp.js";
import { TOOL_SCOPES } from "./tool-scopes.js";

const noStore = { "cache-control": HEADERS.noStore };
// Not on every 403 (a refused Origin has none): the header without its `required`.
const { required: _always, ...stepUpChallenge } = HEADERS.wwwAuthenticate;
const tools = Object.entries(TOOL_SCOPES)
  .map(([name, scopes]) => `\`${name}\` (${scopes.join(" + ")})`)
  .join(", ");

export const MCP_SCHEMA = {
  operationId: "mcp",
  summary: "The MCP endpoint (Streamable HTTP, stateless)",
  description: `Model Context Protocol over HTTP: JSON-RPC messages in, JSON answers out. Needs an access token issued for this resource (\`resource=<server>/mcp\`); a REST API token is refused. Tools and the scopes a call needs: ${tools}.`,
  tags: ["MCP"],
  security: needs(),
  consumes: ["application/json"],
  body: JsonRpcBody.meta({ examples: [initializeExample] }),
  response: {
    200: json(
      "The JSON-RPC response (a tool's failure is a result with isError: true)",
      JsonRpcAnswer,
      toolResultExample,
      noStore,
    ),
    202: empty("Notifications or responses only: accepted", noStore),
    400: json(
      "Not a JSON-RPC message, or an MCP-Protocol-Version this server does not speak",
      z.union([ErrorBody, JsonRpcRefusal]),
      { error: "invalid_request", error_description: 'jsonrpc: expected "2.0"' },
    ),
    ...bearerErrors("of the tool called"),
    403: error(
      "A tool called without the scopes it needs (the challenge's scope names them all), or a browser Origin other than this server's",
      "insufficient_scope",
      "this request needs the scopes webhooks:write contacts:read",
      {
        "www-authenticate": {
          ...stepUpChallenge,
          description: "On insufficient_scope: the challenge, with scope= every scope the call needs",
        },
      },
    ),
    406: error(
      "The Accept header does not list both application/json and text/event-stream",
      "not_acceptable",
      "the Accept header must list both application/json and text/event-stream (MCP Streamable HTTP)",
    ),
    415: error(
      "The body is not application/json",
      "unsupported_media_type",
      "send the JSON-RPC message as application/json",
    ),
    default: DEFAULT_ERROR,
  },
};
