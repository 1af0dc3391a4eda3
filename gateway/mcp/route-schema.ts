// The documentation (and the body's validation) of POST /mcp: JSON-RPC 2.0
// messages in and out (MCP's Streamable HTTP transport, JSON answers); the
// messages themselves are MCP's (initialize, tools/list, tools/call, …).
import { z } from "zod";
import { ErrorBody, HEADERS, bearerErrors, empty, error, json, needs } from "../schemas/common.js";
import { TOOL_SCOPES } from "./tool-scopes.js";

// Each branch described: a bare union of types would be written as a type list, which strict JSON Schema tools refuse.
const StringId = z.string().describe("A string id");
const NumberId = z.int().describe("A number id");
const Id = z.union([StringId, NumberId]).describe("The request's id; absent on a notification");

const JsonRpcMessage = z
  .looseObject({
    jsonrpc: z.literal("2.0", { error: 'jsonrpc: expected "2.0"' }),
    id: Id.optional(),
    method: z.string().optional().describe("initialize, tools/list, tools/call, notifications/initialized, …"),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: "JsonRpcMessage", description: "A JSON-RPC 2.0 request, notification or response, as MCP defines them" });

const JsonRpcBody = z
  .union([JsonRpcMessage, z.array(JsonRpcMessage).min(1, { error: "a batch holds at least one message" })], {
    error: 'the body must be a JSON-RPC 2.0 message (an object with jsonrpc "2.0") or an array of them',
  })
  .describe("One JSON-RPC message, or a batch of them");

const JsonRpcResponse = z
  .looseObject({
    jsonrpc: z.literal("2.0"),
    id: z
      .union([StringId, NumberId, z.null().describe("null: the request could not be read")])
      .describe("The id of the request answered"),
    result: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("The method's result (a tool's: content, structuredContent, isError)"),
    error: z
      .object({ code: z.int(), message: z.string(), data: z.unknown().optional() })
      .optional()
      .describe("A JSON-RPC error"),
  })
  .meta({ id: "JsonRpcResponse", description: "A JSON-RPC 2.0 response" });

const JsonRpcAnswer = z
  .union([JsonRpcResponse, z.array(JsonRpcResponse)])
  .describe("The response, or one per request of a batch");

const initializeExample = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "agent", version: "1.0.0" } },
};

const toolResultExample = {
  jsonrpc: "2.0",
  id: 2,
  result: {
    content: [{ type: "text", text: '{"id":"9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a","name":"Acme Ltd"}' }],
    structuredContent: { id: "9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a", name: "Acme Ltd" },
  },
};

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
      z.union([ErrorBody, JsonRpcResponse]),
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
  },
};
