// The body of every services/<name>/main.ts: read the configuration, open the
// real backends, listen, and drain on SIGTERM/SIGINT.
import { SERVICE_PROCESS_CHECKS, loadConfigOrExit, type Config } from "./config.js";
import { openBus } from "./event-bus/open-bus.js";
import { exitIfPortInUse, listenOn } from "./port-in-use.js";
import { createLogger, type Logger } from "./logger.js";
import { startRpcServer } from "./rpc/server.js";
import { startTracing } from "./trace/tracing.js";
import type { ServiceApp, ServiceAppDeps } from "./service-app.js";

export interface ServiceMainOptions {
  name: string;
  port: (config: Config) => number;
  create: (deps: ServiceAppDeps) => Promise<ServiceApp>;
  /** SERVICE_PROCESS_CHECKS unless given. */
  checks?: ((config: Config) => void)[];
}

export async function serviceMain(options: ServiceMainOptions): Promise<void> {
  const config = loadConfigOrExit(options.checks ?? SERVICE_PROCESS_CHECKS);
  const logger = createLogger(options.name, config.LOG_LEVEL);
  // A stop during start (waiting for NATS, migrating) closes what is open so far and exits 0.
  const closers: (() => Promise<void>)[] = [];
  onShutdown(logger, async () => {
    for (const close of closers.reverse()) await close();
  });
  try {
    const tracing = await startTracing(options.name);
    closers.push(() => tracing.shutdown().catch((err: unknown) => logger.warn({ err }, "spans not exported")));
    const bus = await openBus(config, options.name, logger);
    closers.push(() => bus.close());
    const app = await options.create({
      config,
      databaseUrl: config.DATABASE_URL!,
      databasePoolMax: config.DATABASE_POOL_MAX,
      bus,
      logger,
    });
    closers.push(() => app.close());
    const listen = {
      variable: `${options.name.toUpperCase()}_RPC_PORT`,
      host: config.RPC_HOST,
      port: options.port(config),
    };
    const server = await listenOn(listen, () =>
      startRpcServer({
        name: options.name,
        host: listen.host,
        port: listen.port,
        routes: app.routes,
        logger,
        internalTokens: config.INTERNAL_RPC_TOKEN,
        readiness: app.readiness,
      }),
    );
    closers.push(() => server.close());
    await app.start();
  } catch (err) {
    exitIfPortInUse(options.name, err);
    logger.fatal({ err }, `${options.name} failed to start`);
    process.exit(1);
  }
}

/** A signal this soon after the first is the same stop, delivered twice. */
const REPEATED_SIGNAL_MS = 1_000;

/** SIGTERM/SIGINT: drain once, exit 0; a later second signal or a stuck drain exits 1. */
export function onShutdown(logger: Logger, drain: () => Promise<void>, timeoutMs = 25_000): void {
  let drainingSince: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (drainingSince !== undefined) {
      // One stop often arrives twice (directly, and as npm forwards it): only a later one cuts the drain short.
      if (Date.now() - drainingSince < REPEATED_SIGNAL_MS) return;
      process.exit(1);
    }
    drainingSince = Date.now();
    logger.info({ signal }, "draining");
    setTimeout(() => {
      logger.error("drain timed out");
      process.exit(1);
    }, timeoutMs).unref();
    drain().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, "drain failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}
