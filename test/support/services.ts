// Starts service modules on loopback ports, as main.ts does, for a test file.
import type { DescService } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import type { Config } from "../../services/shared/config.js";
import type { EventBus } from "../../services/shared/event-bus/event-bus.js";
import { openBus } from "../../services/shared/event-bus/open-bus.js";
import { createLogger, type Logger } from "../../services/shared/logger.js";
import { createRpcClient } from "../../services/shared/rpc/client.js";
import { startRpcServer, type RunningServer } from "../../services/shared/rpc/server.js";
import type { ServiceApp, ServiceAppDeps } from "../../services/shared/service-app.js";
import type { TestDatabase } from "./backends.js";
import { deleteStream } from "./stream.js";

export interface StartedService<A extends ServiceApp> {
  app: A;
  server: RunningServer;
  client<T extends DescService>(service: T, token?: string): Client<T>;
  stop(): Promise<void>;
}

export async function startService<A extends ServiceApp>(
  create: (deps: ServiceAppDeps) => Promise<A>,
  options: { config: Config; db: TestDatabase; bus: EventBus; logger?: Logger },
): Promise<StartedService<A>> {
  const logger = options.logger ?? createLogger("test", options.config.LOG_LEVEL);
  const app = await create({
    config: options.config,
    databaseUrl: options.db.url,
    databasePoolMax: options.db.poolMax,
    bus: options.bus,
    logger,
  });
  const server = await startRpcServer({
    name: app.name,
    host: "127.0.0.1",
    port: 0,
    routes: app.routes,
    logger,
    internalTokens: options.config.INTERNAL_RPC_TOKEN,
    readiness: app.readiness,
  });
  await app.start();
  return {
    app,
    server,
    client: (service, token = options.config.internalToken) =>
      createRpcClient(service, { baseUrl: server.url, timeoutMs: 10_000, internalToken: token }),
    stop: async () => {
      await server.close();
      await app.close();
    },
  };
}

/** The bus of a test file; on NATS, closing it also deletes the file's stream (nothing left behind). */
export async function openTestBus(config: Config): Promise<EventBus> {
  const bus = await openBus(config, "test", createLogger("test", config.LOG_LEVEL));
  if (bus.kind !== "nats" || !config.NATS_URL) return bus;
  const natsUrl = config.NATS_URL;
  const close = bus.close.bind(bus);
  bus.close = async () => {
    await close();
    await deleteStream(natsUrl, config.NATS_STREAM);
  };
  return bus;
}
