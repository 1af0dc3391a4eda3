// POST /mcp: the MCP endpoint (Streamable HTTP transport, stateless, JSON
// answers), a protected resource of its own ("mcp" of
// services/shared/protected-resources.ts). In order:
//
//   1. Origin: the MCP transport says "Servers MUST validate the Origin
//      header on all incoming connections to prevent DNS rebinding attacks.
//      If the Origin header is present and invalid, servers MUST respond
//      with HTTP 403 Forbidden." Valid are the issuer's own origin and
//      MCP_ALLOWED_ORIGINS (the list the CORS answers use); a request
//      without Origin (an agent, not a browser) passes.
//   2. The bearer token, issued for the /mcp resource (RFC 8707): else 401
//      with resource_metadata, before the body is read.
//   3. The step-up pre-check (scope-check.ts): a tools/call without its
//      scopes is HTTP 403 insufficient_scope naming them all.
//   4. The MCP server of this request (server.ts) answers the messages.
//
// GET (a server-to-client stream) and DELETE (ending a session) are not
// served: "The server MUST either return Content-Type: text/event-stream in
// response to this HTTP GET, or else return HTTP 405 Method Not Allowed";
// "The server MAY respond to this request with HTTP 405 Method Not Allowed,
// indicating that the server does not allow clients to terminate sessions."
// The gateway's router answers both 405 with Allow: POST.
//
// The SDK's web-standard transport answers a Request with a Response, which
// this route sends through the reply: the gateway's headers (x-request-id,
// nosniff), its log line and error handler stay as on every route, and with
// JSON answers (no event stream) nothing needs the raw socket.
import type {
  FastifyInstance,
  FastifyRequest,
  onRequestAsyncHookHandler,
  preHandlerAsyncHookHandler,
  preValidationAsyncHookHandler,
} from "fastify";
import type { Bearer } from "../bearer.js";
import { readBuildInfo } from "../build-info.js";
import { rpcOptions, type ServiceClients } from "../clients.js";
import { HttpError } from "../errors.js";
import { MCP_SCHEMA } from "./route-schema.js";
import { missingScopeChallenge } from "./scope-check.js";
import type { McpServerDeps } from "./server.js";

// The MCP SDK and the tools are loaded on the first request to the endpoint,
// not at start: their modules are a large part of a cold start's loading.
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

function originCheck(allowed: readonly string[]): onRequestAsyncHookHandler {
  return async (request) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !allowed.includes(origin)) {
      throw new HttpError(
        403,
        "forbidden",
        `requests from the origin ${JSON.stringify(origin.slice(0, 100))} are not accepted here`,
      );
    }
  };
}

/**
 * MCP transport, "Sending Messages to the Server": "The body of the POST
 * request MUST be a single JSON-RPC request, notification, or response"
 * and "The client MUST include an Accept header, listing both
 * application/json and text/event-stream as supported content types."
 */
const mediaTypes: preValidationAsyncHookHandler = async (request) => {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json")
    throw new HttpError(415, "unsupported_media_type", "send the JSON-RPC message as application/json");
  const accept = request.headers.accept ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) {
    throw new HttpError(
      406,
      "not_acceptable",
      "the Accept header must list both application/json and text/event-stream (MCP Streamable HTTP)",
    );
  }
};

/** The web-standard request the transport reads: the headers it needs; the body is passed parsed. */
function webRequest(request: FastifyRequest, issuer: string): Request {
  const headers = new Headers();
  for (const name of TRANSPORT_HEADERS) {
    const value = request.headers[name];
    if (typeof value === "string") headers.set(name, value);
  }
  return new Request(`${issuer}${MCP_PATH}`, { method: "POST", headers });
}

/**
 * `origins`: the pages allowed to call /mcp (cors.ts mcpOrigins: PUBLIC_URL's
 * origin and MCP_ALLOWED_ORIGINS), the same list as the CORS answers.
 */
export function mcpRoutes(
  app: FastifyInstance,
  bearer: Bearer,
  clients: ServiceClients,
  issuer: string,
  origins: readonly string[],
): void {
  const deps: McpServerDeps = {
    version: readBuildInfo().version,
    bearer,
    organisations: clients.organisation,
    webhook: clients.webhook,
    delivery: clients.delivery,
  };
  const origin = originCheck(origins);
  const authenticate: onRequestAsyncHookHandler = async (request) => {
    request.bearer = await bearer.authenticate(request, "mcp");
  };
  const stepUp: preHandlerAsyncHookHandler = async (request) => {
    const scopes = missingScopeChallenge(request.body, request.bearer!.scopes);
    if (scopes) throw bearer.challenges("mcp").insufficientScope(scopes);
  };

  app.post(
    MCP_PATH,
    { schema: MCP_SCHEMA, onRequest: [origin, authenticate], preValidation: mediaTypes, preHandler: stepUp },
    async (request, reply) => {
      const { Transport, createMcpServer } = await loadMcp();
      const server = createMcpServer(deps, { principal: request.bearer!, rpc: rpcOptions(request), log: request.log });
      // Stateless: no session id; every answer is one JSON body (no event stream).
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
