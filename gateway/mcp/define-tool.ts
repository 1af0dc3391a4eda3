// One tool of the MCP server: defineTool() names its scopes in the
// description and checks them again when it runs (the route's pre-check
// answers 403 first), and turns whatever its work throws into a tool error in
// the REST routes' words: a failed call is never a JSON-RPC error nor a 500.
import { Code, ConnectError } from "@connectrpc/connect";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyBaseLogger } from "fastify";
import { z } from "zod";
import { TargetUnavailableSchema } from "../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { BearerPrincipal } from "../bearer-cache.js";
import { HttpError, fromConnectError } from "../errors.js";
import { ListQuery } from "../schemas/common.js";
import { TOOL_SCOPES, type ToolName } from "./tool-scopes.js";

/** What every tool call runs with: the token's principal, the request's RPC options and log. */
export interface ToolContext {
  principal: BearerPrincipal;
  rpc: { headers: Record<string, string> };
  log: FastifyBaseLogger;
}

interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject> {
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  run(args: z.output<I>, context: ToolContext): Promise<z.output<O>>;
}

/** A tool's arguments: the fields given and no other (a misspelt argument must not pass as "left out"). */
export function toolArguments<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === "unrecognized_keys"
        ? `unknown argument ${JSON.stringify(String(iss.keys[0]).slice(0, 40))}; the arguments are: ${Object.keys(shape).join(", ") || "none"}`
        : "the arguments must be a JSON object",
  });
}

/** limit and cursor of the list tools: the REST list's bounds and words, limit a JSON number. */
export function listArguments(fallback: number, max: number) {
  const query = ListQuery(fallback, max).shape;
  const badLimit = `limit: expected a whole number from 1 to ${max}`;
  return {
    limit: z
      .int({ error: badLimit })
      .min(1, { error: badLimit })
      .max(max, { error: badLimit })
      .optional()
      .describe(query.limit.description ?? ""),
    cursor: query.cursor.describe("Where the page starts: the next_cursor of the previous page"),
  };
}

export const NextCursor = z
  .string()
  .nullable()
  .describe("Pass it as cursor to read the next page; null on the last page");

// MCP tools: "Tool Execution Errors: Reported in tool results with isError: true", for the model to adjust.
const toolError = (message: string): CallToolResult => ({ isError: true, content: [{ type: "text", text: message }] });

/** The message of a failed call; a failure of ours is logged (its cause is never shown). */
function messageOf(err: unknown, log: FastifyBaseLogger): string {
  if (err instanceof HttpError) return err.description;
  if (err instanceof ConnectError) {
    const [target] = err.code === Code.Unavailable ? err.findDetails(TargetUnavailableSchema) : [];
    if (target) return `temporarily unavailable: ${target.description}`;
    const known = fromConnectError(err);
    if (known.status < 500) return known.description;
    log.error({ err }, "MCP tool call failed");
    return known.status === 503 ? `temporarily unavailable: ${known.description}` : known.description;
  }
  log.error({ err }, "MCP tool call failed");
  return "the server could not complete the request; try again later";
}

export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  server: McpServer,
  context: ToolContext,
  name: ToolName,
  spec: ToolSpec<I, O>,
): void {
  const scopes = TOOL_SCOPES[name];
  const needs = `Needs the scope${scopes.length > 1 ? "s" : ""} ${scopes.join(" and ")}.`;
  const handler = async (args: z.output<I>): Promise<CallToolResult> => {
    try {
      if (!scopes.every((scope) => context.principal.scopes.includes(scope)))
        return toolError(`this tool needs the scopes ${scopes.join(" ")}`);
      const value = await spec.run(args, context);
      // MCP tools: a tool returning structured content "SHOULD also return the serialized JSON in a TextContent block."
      return { structuredContent: value, content: [{ type: "text", text: JSON.stringify(value) }] };
    } catch (err) {
      return toolError(messageOf(err, context.log));
    }
  };
  server.registerTool(
    name,
    {
      title: spec.title,
      description: `${spec.description} ${needs}`,
      inputSchema: spec.input,
      outputSchema: spec.output,
      annotations: spec.annotations,
    },
    handler as never,
  );
}
