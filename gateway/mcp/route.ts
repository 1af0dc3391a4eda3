// POST /mcp: the MCP endpoint (Streamable HTTP, stateless, JSON answers), a
// protected resource of its own: the Origin check, the bearer token issued
// for /mcp (before the body is read), the step-up pre-check, then an MCP
// server of this request. GET and DELETE are 405 (the router's Allow: POST).
// The SDK's transport answers a web Request with a Response, sent through the
// reply, so the gateway's headers, log line and error handler stay as on every route.
import type {
  FastifyInstance,
  FastifyRequest,
  onRequestAsyncHookHandler,
  preHandlerAsyncHookHandler,
  preValidationAsyncHookHandler,
} from "fastify";
import type { ApiDeps } from "../bearer.js";
import { requireJson } from "../body-parsers.js";
import { readBuildInfo } from "../build-info.js";
import { rpcOptions } from "../clients.js";
import { HttpError } from "../errors.js";
import { MCP_SCHEMA } from "./route-schema.js";
import { missingScopeChallenge } from "./scope-check.js";

// The SDK and the tools are loaded on the first request, not at start: they are a large part of a cold start.
type McpModules = {
  Transport: typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js").WebStandardStreamableHTTPServerTransport;
  createMcpServer: typeof import("./server.js").createMcpServer;
};
let mcpModules: Promise<McpModules> | undefined;
const loadMcp = () =>
  (mcpModules ??= Promise.all([
    import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
    import("./server.js"),
  ]).then(([sdk, server]) => ({
    Transport: sdk.WebStandardStreamableHTTPServerTransport,
    createMcpServer: server.createMcpServer,
  })));

export const MCP_PATH = "/mcp";

/** The request headers the transport reads (the body it gets parsed). */
const TRANSPORT_HEADERS = ["accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"];

// MCP transport: "If the Origin header is present and invalid, servers MUST respond with HTTP 403
// Forbidden." A request without Origin (an agent, not a browser) passes.
function originCheck(allowed: readonly string[]): onRequestAsyncHookHandler {
  return async (request) => {
    const origin = request.headers.origin;
    if (origin === undefined || allowed.includes(origin)) return;
    const description = `requests from the origin ${JSON.stringify(origin.slice(0, 100))} are not accepted here`;
    throw new HttpError(403, "forbidden", description);
  };
}

// MCP transport: "The client MUST include an Accept header, listing both application/json and text/event-stream".
const mediaTypes: preValidationAsyncHookHandler = async (request) => {
  requireJson(request, "the JSON-RPC message");
  const accept = request.headers.accept ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
    throw new HttpError(
      406,
      "not_acceptable",
      "the Accept header must list both application/json and text/event-stream (MCP Streamable HTTP)",
    );
  }
};

function webRequest(request: FastifyRequest, issuer: string): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  return new Request(`${issuer}${MCP_PATH}`, { method: "POST", headers });
}

/** `origins`: the pages allowed to call /mcp (cors.ts mcpOrigins), the same list as the CORS answers. */
export function mcpRoutes(app: FastifyInstance, deps: ApiDeps, origins: readonly string[]): void {
  const { bearer, issuer } = deps;
  const version = readBuildInfo().version;
  const authenticate: onRequestAsyncHookHandler = async (request) => {
    request.bearer = await bearer.authenticate(request, "mcp");
  };
  const stepUp: preHandlerAsyncHookHandler = async (request) => {
    const scopes = missingScopeChallenge(request.body, request.bearer!.scopes);
    if (scopes) throw bearer.challenges("mcp").insufficientScope(scopes);
  };

  app.post(
    MCP_PATH,
    {
      schema: MCP_SCHEMA,
      onRequest: [originCheck(origins), authenticate],
      preValidation: mediaTypes,
      preHandler: stepUp,
    },
    async (request, reply) => {
      const { Transport, createMcpServer } = await loadMcp();
      const context = { principal: request.bearer!, rpc: rpcOptions(request), log: request.log };
      const server = createMcpServer({ ...deps, version }, context);
      const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      try {
        await server.connect(transport);
        const response = await transport.handleRequest(webRequest(request, issuer), { parsedBody: request.body });
        const body = await response.text();
        reply.status(response.status).header("cache-control", "no-store");
        const type = response.headers.get("content-type");
        if (type) reply.type(type);
        return reply.send(body === "" ? undefined : body);
      } finally {
        await transport.close();
        await server.close();
      }
    },
  );
}
