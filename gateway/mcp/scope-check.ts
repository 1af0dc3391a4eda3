// The step-up check of POST /mcp, on the JSON-RPC body before the MCP server
// sees it: a tool called without its scopes is an HTTP 403 naming them (MCP
// authorization, "Scope Challenge Handling"). A batch needs every tool's.
import { scopesOfTool } from "./tool-scopes.js";

/** Every scope the body's tool calls need, each once, in the order the tools name them. */
export function scopesNeeded(body: unknown): string[] {
  const scopes = new Set<string>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== "object" || message === null || Array.isArray(message)) continue;
    const { method, params } = message as { method?: unknown; params?: { name?: unknown } | null };
    const name = method === "tools/call" && typeof params === "object" ? params?.name : undefined;
    if (typeof name === "string") for (const scope of scopesOfTool(name)) scopes.add(scope);
  }
  return [...scopes];
}

/** All the scopes the body needs (so a token asked for with exactly them works), or undefined when granted. */
export function missingScopeChallenge(body: unknown, granted: readonly string[]): string[] | undefined {
  const needed = scopesNeeded(body);
  return needed.every((scope) => granted.includes(scope)) ? undefined : needed;
}
