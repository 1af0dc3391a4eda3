// The REST gateway: the documented paths and form-encoded OAuth requests,
// mapped onto the RPC services. Built here, served by main.ts.
import { randomUUID } from "node:crypto";
import formbody from "@fastify/formbody";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger } from "../services/shared/logger.js";
import { acceptRequestId, REQUEST_ID_HEADER } from "../services/shared/request-context.js";
import type { ServiceClients } from "./clients.js";
import { HttpError, errorHandler, sendError } from "./errors.js";
import { healthRoutes } from "./routes/health.js";
import { tokenRoutes } from "./routes/token.js";

export const BODY_LIMIT_BYTES = 64 * 1024;

export interface GatewayOptions {
  clients: ServiceClients;
  /** Service name -> RPC base URL, for /readyz. */
  serviceUrls: Record<string, string>;
  logger: Logger;
  /** Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed; none by default. */
  trustedProxies?: string[];
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger as unknown as FastifyBaseLogger,
    disableRequestLogging: true,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: options.trustedProxies?.length ? options.trustedProxies : false,
    // While closing, requests on open connections are still served (the drain).
    return503OnClosing: false,
    // Malformed HTTP that never reaches a route still gets the one error shape.
    clientErrorHandler: (err, socket) => {
      if (!socket.writable) return socket.destroy();
      const code = (err as NodeJS.ErrnoException).code;
      const [status, text, description] =
        code === "HPE_HEADER_OVERFLOW"
          ? [431, "Request Header Fields Too Large", "the request headers are too large"]
          : code === "ERR_HTTP_REQUEST_TIMEOUT"
            ? [408, "Request Timeout", "the request took too long to arrive"]
            : [400, "Bad Request", "the request is not valid HTTP"];
      const body = JSON.stringify({ error: "invalid_request", error_description: description });
      socket.end(
        `HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    // The caller's request id when it is sane, else a new one; routes pass it to
    // every RPC they make (rpcOptions), so it reaches the services' log lines.
    genReqId: (req) => acceptRequestId(req.headers[REQUEST_ID_HEADER] as string | undefined) ?? randomUUID(),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  });

  // Only the two body types the API speaks: anything else is 415.
  app.removeContentTypeParser("text/plain");
  await app.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });

  app.addHook("onRequest", async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    // Every answer is JSON (or, later, HTML pages that set their own policy): never sniffed.
    reply.header("x-content-type-options", "nosniff");
  });
  // One log line per request.
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        url: request.url.split("?")[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        client: request.ip,
      },
      "request",
    );
  });

  // 404 for an unknown path, 405 (with Allow) for a known path and another method.
  const routes: { pattern: RegExp; method: string }[] = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const pattern = new RegExp(`^${route.url.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+")}$`);
    for (const method of methods) routes.push({ pattern, method: method.toUpperCase() });
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0]!;
    const allowed = [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      return sendError(reply, new HttpError(405, "method_not_allowed", `use ${allowed.join(", ")} on ${path}`, { allow: allowed.join(", ") }));
    }
    return sendError(reply, new HttpError(404, "not_found", `no route ${request.method} ${path}`));
  });
  app.setErrorHandler(errorHandler);

  healthRoutes(app, { services: options.serviceUrls });
  tokenRoutes(app, options.clients.auth);
  return app;
}
