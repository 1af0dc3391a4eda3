// The REST gateway: the documented paths and form-encoded OAuth requests,
// mapped onto the RPC services. Built here, served by main.ts.
import { randomUUID } from "node:crypto";
import type { IncomingMessage, Server } from "node:http";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyHttpOptions, type FastifyInstance } from "fastify";
import type { Config } from "../services/shared/config.js";
import type { EventBus } from "../services/shared/event-bus/event-bus.js";
import type { Logger } from "../services/shared/logger.js";
import { httpRequestDuration } from "../services/shared/metrics/metrics.js";
import { acceptRequestId, REQUEST_ID_HEADER } from "../services/shared/request-context.js";
import { createBearer } from "./bearer.js";
import { BearerCache } from "./bearer-cache.js";
import { registerBodyParsers } from "./body-parsers.js";
import type { ServiceClients } from "./clients.js";
import { Connections } from "./connections.js";
import { mcpOrigins, registerCors } from "./cors.js";
import { HttpError, errorHandler, sendError, toHttpError } from "./errors.js";
import { RouteTable, requestGuards } from "./request-guards.js";
import { healthRoutes } from "./routes/health.js";
import { introspectRoutes } from "./routes/introspect.js";
import { contactRoutes } from "./routes/contacts.js";
import { deliveryRoutes } from "./routes/deliveries.js";
import { eventTypeRoutes } from "./routes/event-types.js";
import { landingRoutes } from "./routes/landing.js";
import { docsPageRoutes } from "./openapi/docs-page.js";
import { mcpRoutes } from "./mcp/route.js";
import { meRoutes } from "./routes/me.js";
import { DEFAULT_REGISTRATION, metadataRoutes, type RegistrationOptions } from "./routes/metadata.js";
import { protectedResources } from "../services/shared/protected-resources.js";
import { registerRoutes } from "./routes/register.js";
import { revokeRoutes } from "./routes/revoke.js";
import { subscriptionRoutes } from "./routes/subscriptions.js";
import { subscriptionSecretRoutes } from "./routes/subscription-secret.js";
import { subscriptionEventRoutes } from "./routes/subscription-events.js";
import { subscriptionRecoverRoutes } from "./routes/subscription-recover.js";
import { tokenRoutes } from "./routes/token.js";
import { accountRoutes } from "./routes/account.js";
import { authorizeRoutes } from "./routes/authorize.js";
import { pageAssetRoutes } from "./pages/assets.js";
import { createFormGuard } from "./form-guard.js";
import { createSessionCookie } from "./session-cookie.js";
import { stringParamGuard } from "./string-params.js";
import { registerOpenApi, type OpenApiOptions } from "./openapi/document.js";
import { webhooksObject } from "./openapi/events.js";
import { openapiRoutes } from "./openapi/routes.js";
import { validatorCompiler } from "./validation.js";
import { tracingState } from "../services/shared/trace/tracing.js";
import { endRequestTrace, requestTrace, requestTraceId } from "./trace.js";

export const BODY_LIMIT_BYTES = 64 * 1024;

export interface GatewayTimeouts {
  /** The whole request (head and body) must arrive within this long, else 408. */
  requestMs: number;
  /** The head must arrive within this long, else 408 (capped at requestMs). */
  headersMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveMs: number;
}

export const DEFAULT_TIMEOUTS: GatewayTimeouts = { requestMs: 10_000, headersMs: 5_000, keepAliveMs: 72_000 };

/** The registration options of a gateway's config. */
export function gatewayRegistration(config: Config): RegistrationOptions {
  return {
    dynamicRegistration: config.OAUTH_DYNAMIC_REGISTRATION,
    clientMetadataDocuments: config.OAUTH_CLIENT_METADATA_DOCUMENTS,
  };
}

export function gatewayTimeouts(config: Config): GatewayTimeouts {
  return {
    requestMs: config.GATEWAY_REQUEST_TIMEOUT_MS,
    headersMs: config.GATEWAY_HEADERS_TIMEOUT_MS,
    keepAliveMs: config.GATEWAY_KEEP_ALIVE_TIMEOUT_MS,
  };
}

export interface GatewayOptions {
  clients: ServiceClients;
  /** Service name -> RPC base URL, for /readyz. */
  serviceUrls: Record<string, string>;
  logger: Logger;
  /** Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed; none by default. */
  trustedProxies?: string[];
  timeouts?: Partial<GatewayTimeouts>;
  /**
   * The bus revocations arrive on (bizcard.grant.revoked, .token.revoked):
   * bearer checks are cached only with one. Optional only for tests that need
   * no cache and for a gateway started without NATS_URL.
   */
  bus?: EventBus;
  /**
   * The gateway's public URL (config.publicUrl), which is the authorization
   * server's issuer: RFC 8414 metadata, introspection's iss; https makes the
   * session cookie __Host- and Secure.
   */
  publicUrl?: string;
  /** BEARER_CACHE_MS: how long a bearer check is kept at most (default 30 s; 0 turns the cache off). */
  bearerCacheMs?: number;
  /** OAUTH_DYNAMIC_REGISTRATION and OAUTH_CLIENT_METADATA_DOCUMENTS (metadata, POST /oauth/register). */
  registration?: Partial<RegistrationOptions>;
  /**
   * The OpenAPI document's `webhooks` (the event catalog, gateway/openapi/events.ts
   * webhooksObject()); none when not given.
   */
  webhooks?: OpenApiOptions["webhooks"];
  /** MCP_ALLOWED_ORIGINS: the browser origins, besides PUBLIC_URL's, whose pages may call /mcp. */
  mcpAllowedOrigins?: string[];
}

export const DEFAULT_ISSUER = "http://localhost:8080";

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const connections = new Connections(options.logger);
  const fastifyOptions: FastifyHttpOptions<Server, FastifyBaseLogger> = {
    loggerInstance: options.logger as unknown as FastifyBaseLogger,
    // One log line per request (onResponse below), keyed requestId like the services' lines.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "requestId" }),
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: options.trustedProxies?.length ? options.trustedProxies : false,
    // While closing, requests already received are still served (the drain, see connections.ts).
    return503OnClosing: false,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    http: {
      requestTimeout: timeouts.requestMs,
      headersTimeout: Math.min(timeouts.headersMs, timeouts.requestMs),
      // How often node checks the two timeouts above (its default is 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(timeouts.requestMs / 4))),
      // A missing Host is answered in the one shape (request-guards.ts), not by node's empty 400.
      requireHostHeader: false,
    },
    // Malformed HTTP that never reaches a route still gets the one error shape.
    clientErrorHandler: connections.onClientError,
    // A path fastify cannot decode (GET /%zz) or route.
    frameworkErrors: (err, request, reply) => {
      reply.header(REQUEST_ID_HEADER, request.id).header("x-content-type-options", "nosniff");
      if ((err as { code?: string }).code === "FST_ERR_BAD_URL") {
        return sendError(reply, new HttpError(400, "invalid_request", "the path is not validly percent-encoded"));
      }
      return errorHandler(toHttpError(err) ?? err, request, reply);
    },
    // The caller's request id when it is sane, else a new one; routes pass it to
    // every RPC they make (rpcOptions), so it reaches the services' log lines.
    genReqId: (req) => acceptRequestId(req.headers[REQUEST_ID_HEADER] as string | undefined) ?? randomUUID(),
    // The request's lines carry its trace id too (trace.ts).
    childLoggerFactory: (logger, bindings, options, raw) =>
      logger.child({ ...bindings, traceId: requestTraceId(raw as IncomingMessage) }, options),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  };
  const app = Fastify(fastifyOptions);
  connections.attach(app);
  // RFC 9110 §10.1.1: an Expect other than 100-continue goes through the routing
  // like any request, where request-guards.ts answers 417 in the one shape.
  app.server.on("checkExpectation", app.routing);

  registerBodyParsers(app, BODY_LIMIT_BYTES);
  // The routes' zod schemas validate requests (validation.ts) and make the
  // OpenAPI document; answers are written as they are (JSON.stringify), and
  // the tests check them against the document instead.
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.addHook("onRequest", (request, reply, done) => {
    // Exporting spans: every request has its server span, whether or not it logs or calls a service.
    if (tracingState() === "on") requestTrace(request.raw);
    reply.header(REQUEST_ID_HEADER, request.id);
    // Every answer is JSON (or, later, HTML pages that set their own policy): never sniffed.
    reply.header("x-content-type-options", "nosniff");
    done();
  });
  // One log line and one histogram observation per request; the route is its
  // template (/oauth/subscriptions/:id), never the raw path.
  // A callback hook, not an async one: no promise per request.
  app.addHook("onResponse", (request, reply, done) => {
    // Read once: Fastify builds routeOptions anew on every read.
    const route = request.routeOptions.url ?? "unmatched";
    const { method } = request;
    const status = reply.statusCode;
    httpRequestDuration.observe({ method, route, status }, reply.elapsedTime / 1000);
    // The line's fields are made only when it is written (LOG_LEVEL=warn writes none).
    if (options.logger.isLevelEnabled("info")) {
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
    }
    endRequestTrace(request.raw, reply.statusCode, route);
    done();
  });

  const issuer = (options.publicUrl ?? DEFAULT_ISSUER).replace(/\/+$/, "");
  const mcpAllowed = mcpOrigins(issuer, options.mcpAllowedOrigins);
  // Before the guards: their refusals carry the CORS headers too (cors.ts).
  await registerCors(app, mcpAllowed);
  const routes = new RouteTable();
  routes.attach(app);
  requestGuards(app, routes);
  stringParamGuard(app);
  app.setNotFoundHandler((request, reply) => sendError(reply, routes.notFound(request)));
  app.setErrorHandler(errorHandler);

  // Before any route: @fastify/swagger collects the routes as they are added.
  await registerOpenApi(app, { publicUrl: issuer, webhooks: options.webhooks ?? webhooksObject() });
  const auth = options.clients.auth;
  const bearerCache = await BearerCache.open({
    authenticate: (accessToken, call) => auth.authenticateAccessToken({ accessToken }, call),
    bus: options.bus,
    ttlMs: options.bearerCacheMs ?? 30_000,
    logger: options.logger,
  });
  app.addHook("onClose", () => bearerCache.close());
  // Declared up front, so every request object keeps one shape (set by requireScope).
  app.decorateRequest("bearer", undefined);
  const resources = protectedResources(issuer);
  const registration = { ...DEFAULT_REGISTRATION, ...options.registration };
  const bearer = createBearer(bearerCache, resources);

  healthRoutes(app, { services: options.serviceUrls });
  metadataRoutes(app, issuer, resources, registration);
  tokenRoutes(app, auth);
  revokeRoutes(app, auth);
  registerRoutes(app, auth, { enabled: registration.dynamicRegistration });
  introspectRoutes(app, auth, issuer);
  meRoutes(app, bearer, options.clients.organisation);
  subscriptionRoutes(app, bearer, options.clients.webhook, options.clients.delivery, issuer);
  subscriptionSecretRoutes(app, bearer, options.clients.webhook);
  subscriptionRecoverRoutes(app, bearer, options.clients.delivery);
  deliveryRoutes(app, bearer, options.clients.webhook, options.clients.delivery, issuer);
  subscriptionEventRoutes(app, bearer, options.clients.webhook, options.clients.delivery, issuer);
  contactRoutes(app, bearer, options.clients.organisation, issuer);
  mcpRoutes(app, bearer, options.clients, issuer, mcpAllowed);
  eventTypeRoutes(app);
  const sessionCookie = createSessionCookie(options.publicUrl ?? "http://localhost");
  const forms = createFormGuard(options.publicUrl ?? "http://localhost");
  authorizeRoutes(app, auth, options.clients.organisation, sessionCookie, forms);
  accountRoutes(app, auth, sessionCookie, forms);
  pageAssetRoutes(app);
  landingRoutes(app);
  docsPageRoutes(app);
  openapiRoutes(app);
  return app;
}
