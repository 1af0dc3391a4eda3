// One tool of the MCP server: its name (a key of the scope table), its
// documentation and schemas, and its work. defineTool() registers it with
// the scopes of tool-scopes.ts named in its description and checked again
// when it runs (the route's pre-check answers 403 before; this check keeps a
// tool from ever running without them), and turns whatever the work throws
// into a tool error (tool-results.ts).
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { TOOL_SCOPES, type ToolName } from "./tool-scopes.js";
import { runTool, toolError, toolResult, type ToolContext } from "./tool-results.js";

export interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject> {
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  run(args: z.output<I>, context: ToolContext): Promise<z.output<O>>;
}

/**
 * A tool's arguments: the fields given, and no other (as the REST bodies: a
 * misspelt argument must not pass as "left out").
 */
export function toolArguments<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === "unrecognized_keys"
        ? `unknown argument ${JSON.stringify(String(iss.keys[0]).slice(0, 40))}; the arguments are: ${Object.keys(shape).join(", ") || "none"}`
        : "the arguments must be a JSON object",
  });
}

export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  server: McpServer,
  context: ToolContext,
  name: ToolName,
  spec: ToolSpec<I, O>,
): void {
  const scopes = TOOL_SCOPES[name];
  const needs = `Needs the scope${scopes.length > 1 ? "s" : ""} ${scopes.join(" and ")}.`;
  const handler = (args: z.output<I>): Promise<CallToolResult> =>
    runTool(context, async () => {
      if (!scopes.every((scope) => context.principal.scopes.includes(scope)))
        return toolError(`this tool needs the scopes ${scopes.join(" ")}`);
      return toolResult(await spec.run(args, context));
    });
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
