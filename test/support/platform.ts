// The platform under a test file: the services it asks for (organisation,
// auth, webhook, delivery) on the file's own database and bus, and the REST
// gateway in front of them, as main.ts wires them. The backends are the real
// PostgreSQL and NATS, or the embedded ones (backends.ts decides per run).
// One place starts them, so a change to how a service or the gateway is
// built touches this file, not every suite.
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { buildGateway, type GatewayOptions } from "../../gateway/app.js";
import { createServiceClients } from "../../gateway/clients.js";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { OrganisationService } from "../../gen/bizcard/organisation/v1/organisation_pb.js";
import { createAuthApp } from "../../services/auth/auth-app.js";
import { createDeliveryApp } from "../../services/delivery/delivery-app.js";
import { createOrganisationApp } from "../../services/organisation/organisation-app.js";
import type { Config } from "../../services/shared/config.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { createLogger, type Logger } from "../../services/shared/logger.js";
import type { ServiceApp, ServiceAppDeps } from "../../services/shared/service-app.js";
import { createWebhookApp } from "../../services/webhook/webhook-app.js";
import { createTestDatabase, testConfig, type TestDatabase } from "./backends.js";
import { freePort } from "./processes.js";
import { listenTestGateway, type GatewayChoice, type GatewayRequest, type RunningGateway } from "./platform-gateway.js";
import { openTestBus, startService, type StartedService } from "./services.js";

export type OrganisationApp = Awaited<ReturnType<typeof createOrganisationApp>>;
export type AuthApp = Awaited<ReturnType<typeof createAuthApp>>;
export type { StartedService } from "./services.js";

/** The app factories, for suites that wrap one (a resolver, a recording store). */
export { createAuthApp, createDeliveryApp, createOrganisationApp, createWebhookApp };
/** The gateway's parts, for suites whose subject is a gateway of their own (timeouts, close(), logs). */
export { buildGateway, createServiceClients };

type Create<A extends ServiceApp> = (deps: ServiceAppDeps) => Promise<A>;

/** One service of the platform: started (true), or started with its own factory and config values. */
export type ServiceChoice<A extends ServiceApp = ServiceApp> =
  | boolean
  | { create?: Create<A>; config?: Record<string, string> };

export interface PlatformOptions {
  /** INTERNAL_RPC_TOKEN of every service and gateway (random by default). */
  token?: string;
  /** Config values of every service and gateway. */
  config?: Record<string, string>;
  /** "many": several database sessions at once (see createTestDatabase). */
  sessions?: "one" | "many";
  /**
   * A database or bus the test made itself (stop() leaves them to it); a fresh one each by default.
   * A bus factory gets the platform's config (its stream and subject prefix) and returns the
   * bus the services use (one that records, refuses or crashes); stop() closes that bus.
   */
  db?: TestDatabase;
  bus?: EventBus | ((config: Config) => EventBus | Promise<EventBus>);
  /** Started unless false (a gateway alone, for suites that need no service). */
  organisation?: ServiceChoice;
  auth?: ServiceChoice;
  webhook?: ServiceChoice;
  delivery?: ServiceChoice;
  /** A gateway in front of the started services, listening on a loopback port. */
  gateway?: boolean | GatewayChoice;
  /** An organisation with this owner, made once the services run. */
  member?: { organisation: string; email: string; password: string };
  /** The services' logger (their apps and RPC servers; a test reads their lines); stdout by default. */
  logger?: Logger;
}

export interface Platform {
  db: TestDatabase;
  bus: EventBus;
  /** The config every service of the file shares (token, stream, subject prefix, the suite's values). */
  config: Config;
  /** That config with more values (the same token, stream and subject prefix). */
  configWith(overrides: Record<string, string>): Config;
  /** The config of a gateway in front of the started services, with more values. */
  gatewayConfig(overrides?: Record<string, string>): Config;
  organisation: StartedService<OrganisationApp>;
  auth: StartedService<AuthApp>;
  webhook: StartedService<ServiceApp>;
  delivery: StartedService<ServiceApp>;
  /** The gateway's base URL (its PUBLIC_URL as well with publicUrlPort). */
  base: string;
  gateway: FastifyInstance;
  /** The organisation and owner of options.member. */
  organisationId: string;
  memberId: string;
  /**
   * Another service on the file's database and bus (the platform's config with
   * the started services' URLs, or the config given); stop() stops it unless
   * the test did.
   */
  startService<A extends ServiceApp>(create: Create<A>, config?: Config): Promise<StartedService<A>>;
  /**
   * Another gateway in front of the same services; stop() closes it.
   * publicUrlPort: it listens where its PUBLIC_URL says (the services keep theirs);
   * ownBus: with a bus connection of its own (on NATS), as a second gateway process.
   */
  addGateway(
    choice?: GatewayChoice & {
      publicUrl?: string;
      timeouts?: GatewayOptions["timeouts"];
      ownBus?: boolean;
      name?: string;
    },
  ): Promise<RunningGateway>;
  /** A client application registered with the auth service. */
  createClient(
    name: string,
    redirectUris: string[],
    options?: { public?: boolean; scopes?: string[]; ownerOrganisationId?: string; grantTypes?: string[] },
  ): Promise<{ clientId: string; clientSecret: string }>;
  /** Stops everything it started, the gateways first; every part even when one fails. */
  stop(): Promise<void>;
}

const missing = (what: string) => () => {
  throw new Error(`this test's platform was started without ${what}`);
};

function choice<A extends ServiceApp>(
  c: ServiceChoice | undefined,
  create: Create<A>,
): { create: Create<ServiceApp>; config: Record<string, string> } | undefined {
  if (!c) return undefined;
  if (c === true) return { create, config: {} };
  return { create: c.create ?? create, config: c.config ?? {} };
}

export async function startPlatform(options: PlatformOptions = {}): Promise<Platform> {
  const token = options.token ?? randomBytes(32).toString("base64url");
  const first = testConfig({ INTERNAL_RPC_TOKEN: token, ...options.config });
  const shared = {
    INTERNAL_RPC_TOKEN: token,
    NATS_STREAM: first.NATS_STREAM,
    NATS_SUBJECT_PREFIX: first.NATS_SUBJECT_PREFIX,
    ...options.config,
  };
  const configWith = (overrides: Record<string, string>) => testConfig({ ...shared, ...overrides });
  const stops: (() => Promise<void>)[] = [];
  // Everything is stopped even when one stop fails (a test that stopped the
  // database under a service); the first failure is thrown at the end.
  const stop = async () => {
    const failures: unknown[] = [];
    for (const s of stops.splice(0).reverse()) await s().catch((err: unknown) => failures.push(err));
    if (failures.length) throw failures[0];
  };
  const urls: Record<string, string> = {};
  const urlConfig = (): Record<string, string> => ({
    ...(urls.organisation ? { ORGANISATION_RPC_URL: urls.organisation } : {}),
    ...(urls.auth ? { AUTH_RPC_URL: urls.auth } : {}),
    ...(urls.webhook ? { WEBHOOK_RPC_URL: urls.webhook } : {}),
    ...(urls.delivery ? { DELIVERY_RPC_URL: urls.delivery } : {}),
  });
  const started: Record<string, StartedService<ServiceApp>> = {};
  const gateways: RunningGateway[] = [];
  const logger = createLogger("gateway-test", first.LOG_LEVEL);

  try {
    const db = options.db ?? (await createTestDatabase({ sessions: options.sessions }));
    if (!options.db) stops.push(() => db.drop());
    const given = typeof options.bus === "function" ? undefined : options.bus;
    const bus = given ?? (await (typeof options.bus === "function" ? options.bus : openTestBus)(first));
    if (!given) stops.push(() => bus.close());

    const startOne = async <A extends ServiceApp>(create: Create<A>, config: Config): Promise<StartedService<A>> => {
      const service = await startService(create, { config, db, bus, logger: options.logger });
      let stopped: Promise<void> | undefined;
      const stopOnce = () => (stopped ??= service.stop());
      stops.push(stopOnce);
      return { ...service, stop: stopOnce };
    };
    const start = async (name: string, c: ReturnType<typeof choice>, extra: Record<string, string> = {}) => {
      if (!c) return;
      const service = await startOne(c.create, configWith({ ...urlConfig(), ...extra, ...c.config }));
      started[name] = service;
      urls[name] = service.server.url;
    };

    const gatewayConfig = (overrides: Record<string, string> = {}) => configWith({ ...urlConfig(), ...overrides });
    const listenGateway = (g: GatewayRequest, config: Config, port: number) =>
      listenTestGateway(g, config, port, { bus, logger, urls, gateways });
    const inUse = (err: unknown) => (err as { code?: string }).code === "EADDRINUSE";
    const addGateway: Platform["addGateway"] = async (g = {}) => {
      // publicUrlPort: listen where PUBLIC_URL says; another free port should a parallel test take it in between.
      for (let attempt = 0; ; attempt++) {
        const port = g.publicUrlPort ? await freePort() : 0;
        const publicUrl = g.publicUrlPort ? `http://127.0.0.1:${port}` : g.publicUrl;
        try {
          return await listenGateway(
            g,
            gatewayConfig({ ...(publicUrl ? { PUBLIC_URL: publicUrl } : {}), ...g.config }),
            port,
          );
        } catch (err) {
          if (!g.publicUrlPort || !inUse(err) || attempt >= 4) throw err;
        }
      }
    };
    stops.push(async () => {
      for (const g of gateways.slice().reverse()) await g.close();
    });

    await start("organisation", choice(options.organisation ?? true, createOrganisationApp));
    const g: GatewayChoice | undefined = options.gateway === true ? {} : options.gateway || undefined;
    let main: RunningGateway | undefined;
    if (g?.publicUrlPort) {
      // The gateway must listen where PUBLIC_URL (the issuer) says, known
      // before the auth service starts: a free port, and another one (with
      // the services after organisation started again) should a parallel
      // test take it in between.
      for (let attempt = 0; !main; attempt++) {
        const port = await freePort();
        const publicUrl = { PUBLIC_URL: `http://127.0.0.1:${port}` };
        const restartFrom = stops.length;
        await start("auth", choice(options.auth, createAuthApp), publicUrl);
        await start("webhook", choice(options.webhook, createWebhookApp), publicUrl);
        await start("delivery", choice(options.delivery, createDeliveryApp), publicUrl);
        try {
          main = await listenGateway(g, gatewayConfig({ ...publicUrl, ...g.config }), port);
        } catch (err) {
          for (const s of stops.splice(restartFrom).reverse()) await s();
          for (const name of ["auth", "webhook", "delivery"]) {
            delete started[name];
            delete urls[name];
          }
          if (!inUse(err) || attempt >= 4) throw err;
        }
      }
    } else {
      await start("auth", choice(options.auth, createAuthApp));
      await start("webhook", choice(options.webhook, createWebhookApp));
      await start("delivery", choice(options.delivery, createDeliveryApp));
      if (g) main = await addGateway(g);
    }

    let organisationId = "";
    let memberId = "";
    if (options.member) {
      const created = await started.organisation!.client(OrganisationService).createOrganisation({
        name: options.member.organisation,
        ownerEmail: options.member.email,
        ownerPassword: options.member.password,
      });
      organisationId = created.organisation!.id;
      memberId = created.owner!.id;
    }

    const platform: Platform = {
      db,
      bus,
      config: first,
      configWith,
      gatewayConfig,
      organisationId,
      memberId,
      addGateway,
      startService: (create, config) => startOne(create, config ?? configWith(urlConfig())),
      async createClient(name, redirectUris, o = {}) {
        const res = await started.auth!.client(AuthService).createClient({
          name,
          redirectUris,
          public: o.public ?? false,
          scopes: o.scopes ?? [],
          ownerOrganisationId: o.ownerOrganisationId ?? "",
          grantTypes: o.grantTypes ?? [],
        });
        return { clientId: res.client!.clientId, clientSecret: res.clientSecret };
      },
      stop,
    } as Platform;
    for (const name of ["organisation", "auth", "webhook", "delivery"] as const) {
      Object.defineProperty(platform, name, {
        get: started[name] ? () => started[name] : missing(`the ${name} service`),
        enumerable: true,
      });
    }
    Object.defineProperty(platform, "gateway", { get: main ? () => main.app : missing("a gateway") });
    Object.defineProperty(platform, "base", { get: main ? () => main.base : missing("a gateway") });
    return platform;
  } catch (err) {
    await stop();
    throw err;
  }
}
