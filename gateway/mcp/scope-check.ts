// The step-up check of POST /mcp, made on the JSON-RPC body before the MCP
// server sees it, so that a tool called without its scopes is a real HTTP 403
// whose challenge names them (MCP authorization, "Scope Challenge Handling":
// the server responds with HTTP 403 Forbidden and a WWW-Authenticate header
// with error="insufficient_scope" and the scopes needed).
//
// Only tools/call needs scopes (tool-scopes.ts); initialize, tools/list and
// notifications need a valid token for the /mcp resource only. A batch (an
// array of messages) is one operation: it needs the scopes of every tool it
// calls.
import { scopesOfTool } from "./tool-scopes.js";

/** The tool a JSON-RPC message calls, if it is a tools/call naming one. */
function calledTool(message: unknown): string | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const { method, params } = message as { method?: unknown; params?: unknown };
  if (method !== "tools/call" || typeof params !== "object" || params === null) return undefined;
  const name = (params as { name?: unknown }).name;
  return typeof name === "string" ? name : undefined;
}

/** Every scope the body's tool calls need, each once, in the order the tools name them. */
export function scopesNeeded(body: unknown): string[] {
  const messages = Array.isArray(body) ? body : [body];
  const scopes = new Set<string>();
  for (const message of messages) {
    const tool = calledTool(message);
    if (tool !== undefined) for (const scope of scopesOfTool(tool)) scopes.add(scope);
  }
  return [...scopes];
}

/**
 * The scopes to name in the step-up challenge (all the body needs, not only
 * the missing ones: a client asking for exactly them gets a token that
 * works), or undefined when the token holds them all.
 */
export function missingScopeChallenge(body: unknown, granted: readonly string[]): string[] | undefined {
  const needed = scopesNeeded(body);
  return needed.every((scope) => granted.includes(scope)) ? undefined : needed;
}
