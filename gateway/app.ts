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
import { requestGuards } from "./request-guards.js";
import { healthRoutes } from "./routes/health.js";
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
import { introspectRoutes, revokeRoutes } from "./routes/token-requests.js";
import { subscriptionRoutes } from "./routes/subscriptions.js";
import { subscriptionSecretRoutes } from "./routes/subscription-secret.js";
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

const BODY_LIMIT_BYTES = 64 * 1024;

const DEFAULT_TIMEOUTS = {
  /** The whole request (head and body) must arrive within this long, else 408. */
  requestMs: 10_000,
  /** The head must arrive within this long, else 408 (capped at requestMs). */
  headersMs: 5_000,
  keepAliveMs: 72_000,
};

export type GatewayTimeouts = typeof DEFAULT_TIMEOUTS;

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
  serviceUrls: Record<string, string>;
  logger: Logger;
  /** Proxies (addresses or CIDR ranges) whose X-Forwarded-For is believed; none by default. */
  trustedProxies?: string[];
  timeouts?: Partial<GatewayTimeouts>;
  /** The bus revocations arrive on: bearer checks are cached only with one. */
  bus?: EventBus;
  /** PUBLIC_URL: the issuer (RFC 8414); https makes the cookies __Host- and Secure. */
  publicUrl?: string;
  bearerCacheMs?: number;
  registration?: Partial<RegistrationOptions>;
  /** The OpenAPI document's `webhooks`; the event catalog's when not given. */
  webhooks?: OpenApiOptions["webhooks"];
  mcpAllowedOrigins?: string[];
}

export async function buildGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const connections = new Connections(options.logger);
  const fastifyOptions: FastifyHttpOptions<Server, FastifyBaseLogger> = {
    loggerInstance: options.logger as unknown as FastifyBaseLogger,
    // One log line per request (onResponse), keyed requestId like the services' lines.
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
    clientErrorHandler: connections.onClientError,
    frameworkErrors: (err, request, reply) => {
      reply.header(REQUEST_ID_HEADER, request.id).header("x-content-type-options", "nosniff");
      if ((err as { code?: string }).code === "FST_ERR_BAD_URL") {
        return sendError(reply, new HttpError(400, "invalid_request", "the path is not validly percent-encoded"));
      }
      return errorHandler(toHttpError(err) ?? err, request, reply);
    },
    // The caller's request id when it is sane, else a new one; it travels with every RPC (rpcOptions).
    genReqId: (req) => acceptRequestId(req.headers[REQUEST_ID_HEADER] as string | undefined) ?? randomUUID(),
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
  // Answers are written as they are: the tests check them against the document.
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.addHook("onRequest", (request, reply, done) => {
    // Exporting spans: every request has its server span, whether or not it logs or calls a service.
    if (tracingState() === "on") requestTrace(request.raw);
    // Every answer is JSON or a page with its own policy: never sniffed.
    reply.header(REQUEST_ID_HEADER, request.id).header("x-content-type-options", "nosniff");
    done();
  });
  // One log line and one histogram observation per request, by route template, never the raw path.
  app.addHook("onResponse", (request, reply, done) => {
    // Read once: Fastify builds routeOptions anew on every read.
    const route = request.routeOptions.url ?? "unmatched";
    const { method } = request;
    const status = reply.statusCode;
    httpRequestDuration.observe({ method, route, status }, reply.elapsedTime / 1000);
    if (options.logger.isLevelEnabled("info")) {
      const fields = { method, url: request.url.split("?")[0], status, ms: Math.round(reply.elapsedTime) };
      request.log.info({ ...fields, client: request.ip }, "request");
    }
    endRequestTrace(request.raw, status, route);
    done();
  });

  const issuer = (options.publicUrl ?? "http://localhost:8080").replace(/\/+$/, "");
  const mcpAllowed = mcpOrigins(issuer, options.mcpAllowedOrigins);
  await registerCors(app, mcpAllowed);
  const notFound = requestGuards(app);
  stringParamGuard(app);
  app.setNotFoundHandler((request, reply) => sendError(reply, notFound(request)));
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
  // Declared up front, so every request object keeps one shape.
  app.decorateRequest("bearer", undefined);
  const resources = protectedResources(issuer);
  const registration = { ...DEFAULT_REGISTRATION, ...options.registration };
  const bearer = createBearer(bearerCache, resources);

  healthRoutes(app, options.serviceUrls);
  metadataRoutes(app, issuer, resources, registration);
  tokenRoutes(app, auth);
  revokeRoutes(app, auth);
  registerRoutes(app, auth, registration.dynamicRegistration);
  introspectRoutes(app, auth, issuer);
  const api = { bearer, clients: options.clients, issuer };
  meRoutes(app, api);
  subscriptionRoutes(app, api);
  subscriptionSecretRoutes(app, api);
  subscriptionRecoverRoutes(app, api);
  deliveryRoutes(app, api);
  contactRoutes(app, api);
  mcpRoutes(app, api, mcpAllowed);
  eventTypeRoutes(app);
  const pageDeps = {
    auth,
    organisations: options.clients.organisation,
    cookie: createSessionCookie(options.publicUrl ?? "http://localhost"),
    forms: createFormGuard(options.publicUrl ?? "http://localhost"),
  };
  authorizeRoutes(app, pageDeps);
  accountRoutes(app, pageDeps);
  pageAssetRoutes(app);
  landingRoutes(app);
  docsPageRoutes(app);
  openapiRoutes(app);
  return app;
}
