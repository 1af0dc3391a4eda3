// What a tool answers: its result as structured content with a text (JSON)
// copy for clients that read only text, or a tool error (isError) with a
// message the agent can act on. A failed call is never a JSON-RPC error nor
// an HTTP 500: the service's answer is put in the same words the REST routes
// use (errors.ts fromConnectError), an outage is "temporarily unavailable",
// and anything unexpected is logged and reported without its cause.
import { Code, ConnectError } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyBaseLogger } from "fastify";
import { TargetUnavailableSchema } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { BearerPrincipal } from "../bearer-cache.js";
import { HttpError, fromConnectError } from "../errors.js";
import { badCursor } from "../list-paging.js";

/** What every tool call runs with: the token's principal, the request's RPC options and log. */
export interface ToolContext {
  principal: BearerPrincipal;
  /** rpcOptions(request): the request id travels with every RPC the call makes. */
  rpc: { headers: Record<string, string> };
  log: FastifyBaseLogger;
}

/**
 * MCP tools, "Structured Content": "For backwards compatibility, a tool that
 * returns structured content SHOULD also return the serialized JSON in a
 * TextContent block."
 */
export function toolResult<T extends Record<string, unknown>>(value: T): CallToolResult {
  return { structuredContent: value, content: [{ type: "text", text: JSON.stringify(value) }] };
}

/**
 * MCP tools, "Error Handling": "Tool Execution Errors: Reported in tool
 * results with isError: true", so the model sees the message and can adjust.
 */
export function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: message }] };
}

const UNEXPECTED = "the server could not complete the request; try again later";

/** The message of a failed call; a failure of ours is logged (its cause is never shown). */
function messageOf(err: unknown, log: FastifyBaseLogger): string {
  if (err instanceof HttpError) return err.description;
  if (err instanceof ConnectError) {
    if (err.code === Code.InvalidArgument && err.rawMessage.startsWith("page_token:")) return badCursor().description;
    const [target] = err.code === Code.Unavailable ? err.findDetails(TargetUnavailableSchema) : [];
    if (target) return `temporarily unavailable: ${target.description}`;
    const known = fromConnectError(err);
    if (known.status < 500) return known.description;
    log.error({ err }, "MCP tool call failed");
    return known.status === 503 ? `temporarily unavailable: ${known.description}` : known.description;
  }
  log.error({ err }, "MCP tool call failed");
  return UNEXPECTED;
}

/** Runs a tool's work: its result, or the tool error it comes to. */
export async function runTool(context: ToolContext, work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (err) {
    return toolError(messageOf(err, context.log));
  }
}
