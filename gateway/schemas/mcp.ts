// POST /mcp as the OpenAPI document shows it: JSON-RPC 2.0 messages in and
// out (MCP's Streamable HTTP transport, JSON answers); the messages
// themselves are MCP's (initialize, tools/list, tools/call, …), not repeated here.
import { z } from "zod";

// Each branch described: a bare union of types would be written as a type list, which strict JSON Schema tools refuse.
const StringId = z.string().describe("A string id");
const NumberId = z.int().describe("A number id");
const Id = z.union([StringId, NumberId]).describe("The request's id; absent on a notification");

export const JsonRpcMessage = z
  .looseObject({
    jsonrpc: z.literal("2.0", { error: 'jsonrpc: expected "2.0"' }),
    id: Id.optional(),
    method: z.string().optional().describe("initialize, tools/list, tools/call, notifications/initialized, …"),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: "JsonRpcMessage", description: "A JSON-RPC 2.0 request, notification or response, as MCP defines them" });

export const JsonRpcBody = z
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

export const JsonRpcAnswer = z
  .union([JsonRpcResponse, z.array(JsonRpcResponse)])
  .describe("The response, or one per request of a batch");

/** The MCP SDK's own refusals (an unsupported MCP-Protocol-Version, …) are JSON-RPC errors with id null. */
export const JsonRpcRefusal = JsonRpcResponse;

export const initializeExample = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "agent", version: "1.0.0" } },
};

export const toolResultExample = {
  jsonrpc: "2.0",
  id: 2,
  result: {
    content: [{ type: "text", text: '{"id":"9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a","name":"Acme Ltd"}' }],
    structuredContent: { id: "9d3c2b1a-0f4e-4d5c-8b7a-6e5f4d3c2b1a", name: "Acme Ltd" },
  },
};
