// What every service module exports: its routes and background workers, not
// yet listening. A service's main.ts serves one of them as its own process;
// the embedded start (scripts/start.ts) serves all of them in one process.
import type { ConnectRouter } from "@connectrpc/connect";
import type { Config } from "./config.js";
import type { EventBus } from "./event-bus/event-bus.js";
import type { Logger } from "./logger.js";
import type { ReadinessCheck } from "./rpc/health.js";

export interface ServiceApp {
  name: string;
  routes: (router: ConnectRouter) => void;
  readiness: ReadinessCheck;
  /** Background work (outbox relay, consumers): started once the RPC port listens. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface ServiceAppDeps {
  config: Config;
  /** This service's database; the embedded start passes its PGlite URL. */
  databaseUrl: string;
  databasePoolMax: number;
  bus: EventBus;
  logger: Logger;
}
