// Configuration comes from environment variables, read and validated once at
// start. A bad or missing value stops the process with one line that names
// the variable (see `exitOnConfigError`). The README has the table.
import { z } from "zod";
import { bool, int, optionalUrl, port } from "./config-fields.js";
import { oauthSettings } from "./config-oauth.js";
import { webhookSettings } from "./config-webhooks.js";
import { isAddressOrCidr } from "./net/address-syntax.js";

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = "ConfigError";
  }
}

const shape = {
  ...oauthSettings,
  ...webhookSettings,
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /**
   * json: one JSON object a line; pretty: readable lines (pino-pretty, a development dependency).
   * Unset: pretty on a terminal, JSON otherwise. The logger reads it (services/shared/logger.ts).
   */
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  /** Where PostgreSQL is. Unset: the embedded start runs PGlite; a standalone service refuses to start. */
  DATABASE_URL: optionalUrl(["postgres:", "postgresql:"]),
  DATABASE_POOL_MAX: int(10, 1, 200),
  /** Apply committed migrations at start. Set false when a release job runs them instead. */
  MIGRATE_ON_START: bool(true),
  /** Where NATS is (comma-separated for a cluster). Unset: the embedded start uses an in-process bus. */
  NATS_URL: z
    .string()
    .optional()
    .transform((v) => (v === "" ? undefined : v))
    .pipe(
      z
        .string()
        .refine(
          (v) => v.split(",").every((s) => /^(nats|tls|ws|wss):\/\/[^\s]+$/.test(s.trim())),
          "expected nats://host:port[,nats://host:port…]",
        )
        .optional(),
    ),
  NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, "expected 1-64 letters, digits, _ or -")
    .default("BIZCARD"),
  NATS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, "expected a NATS subject token such as bizcard")
    .default("bizcard"),
  NATS_STREAM_REPLICAS: int(1, 1, 5),
  /** How long JetStream remembers a Nats-Msg-Id to drop a re-published event. */
  NATS_DUPLICATE_WINDOW_SECONDS: int(900, 10, 86_400),
  /**
   * The internal credentials, comma-separated: a service accepts any of them
   * and sends the first, so one can be rotated without downtime (add the new
   * one second, then first everywhere, then drop the old one). Parsed to the
   * list; blank counts as unset (only `npm start` may start without one: it
   * generates one). Never echoed in an error.
   */
  INTERNAL_RPC_TOKEN: z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.split(",").map((t) => t.trim()) : []))
    .pipe(
      z
        .array(z.string())
        .refine((list) => list.every((t) => t.length > 0), "expected credentials separated by commas, none empty")
        .refine((list) => list.every((t) => t.length >= 32), "each credential must be at least 32 characters"),
    ),
  RPC_HOST: z.string().min(1).default("127.0.0.1"),
  RPC_TIMEOUT_MS: int(5000, 100, 120_000),
  AUTH_RPC_PORT: port(7101),
  ORGANISATION_RPC_PORT: port(7102),
  WEBHOOK_RPC_PORT: port(7103),
  DELIVERY_RPC_PORT: port(7104),
  AUTH_RPC_URL: optionalUrl(["http:", "https:"]),
  ORGANISATION_RPC_URL: optionalUrl(["http:", "https:"]),
  WEBHOOK_RPC_URL: optionalUrl(["http:", "https:"]),
  DELIVERY_RPC_URL: optionalUrl(["http:", "https:"]),
  GATEWAY_HOST: z.string().min(1).default("127.0.0.1"),
  GATEWAY_PORT: port(8080),
  /**
   * GET /metrics (Prometheus text) of the gateway process, on RPC_HOST: an
   * internal port, never the public one. Under `npm start` it carries every
   * service's metrics (one process, one registry). 0: any free port.
   */
  GATEWAY_METRICS_PORT: port(9464),
  /**
   * The proxies in front of the gateway whose X-Forwarded-For is believed (the
   * client address that logs and rate limits use): addresses or CIDR ranges.
   * Addresses, not a hop count: a count trusts whoever connects directly.
   */
  GATEWAY_TRUSTED_PROXIES: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().refine(isAddressOrCidr, "expected IP addresses or CIDR ranges, comma-separated"))),
  /** The issuer and the base of every absolute URL the gateway writes. */
  PUBLIC_URL: optionalUrl(["http:", "https:"]),
  /** Embedded start: where PGlite keeps its data. */
  DATA_DIR: z.string().min(1).default("./data"),
  OUTBOX_POLL_MS: int(1000, 10, 60_000),
  /**
   * How long a dead relay's lease blocks the next one (one relay publishes at a time).
   * At least 3 × the larger of OUTBOX_POLL_MS and OUTBOX_PUBLISH_TIMEOUT_MS (checkOutboxTimings).
   */
  OUTBOX_LEASE_MS: int(15_000, 500, 300_000),
  /** How long the relay waits for the broker to store one event; a publish starts only while the lease outlasts it. */
  OUTBOX_PUBLISH_TIMEOUT_MS: int(3000, 100, 60_000),
  /** Gateway: how long a bearer check is cached; revocations (on the bus) drop entries at once. 0 turns the cache off. */
  BEARER_CACHE_MS: int(30_000, 0, 600_000),
  /** Gateway: a request's head and body must have arrived within this long (else 408); stalled bodies end here. */
  GATEWAY_REQUEST_TIMEOUT_MS: int(10_000, 100, 600_000),
  /** Gateway: a request's head must have arrived within this long (else 408); never more than the request timeout. */
  GATEWAY_HEADERS_TIMEOUT_MS: int(5_000, 100, 600_000),
  /** Gateway: an idle keep-alive connection is closed after this long (above common load balancers' 60 s). */
  GATEWAY_KEEP_ALIVE_TIMEOUT_MS: int(72_000, 100, 600_000),
  // Pruning (services/shared/prune/): each service deletes its own expired rows.
  /** Auth and delivery: how often each prunes its tables, in seconds (each wait stretched or shrunk by up to 20 %). */
  PRUNE_INTERVAL_SECONDS: int(600, 1, 86_400),
  /** Rows deleted per statement (each its own short transaction) while pruning. */
  PRUNE_BATCH_SIZE: int(500, 1, 100_000),
  /** Delivery: finished deliveries and attempts are kept this many days after their last activity. */
  DELIVERY_LOG_RETENTION_DAYS: int(30, 1, 3650),
};

export type Config = z.output<z.ZodObject<typeof shape>> & {
  /** The internal credential this process sends: the first of INTERNAL_RPC_TOKEN (undefined when unset). */
  internalToken: string | undefined;
  authRpcUrl: string;
  organisationRpcUrl: string;
  webhookRpcUrl: string;
  deliveryRpcUrl: string;
  publicUrl: string;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = z.object(shape).safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? "environment");
    const value = env[variable];
    throw new ConfigError(variable, value === undefined ? `${issue.message} (unset)` : issue.message);
  }
  const c = parsed.data;
  checkOutboxTimings(c);
  if (c.DELIVERY_CLAIM_LEASE_SECONDS * 1000 < c.DELIVERY_TIMEOUT_MS + 5000) {
    throw new ConfigError("DELIVERY_CLAIM_LEASE_SECONDS", "must exceed DELIVERY_TIMEOUT_MS by at least 5 seconds");
  }
  const local = (p: number) => `http://127.0.0.1:${p}`;
  return {
    ...c,
    internalToken: c.INTERNAL_RPC_TOKEN[0],
    authRpcUrl: c.AUTH_RPC_URL ?? local(c.AUTH_RPC_PORT),
    organisationRpcUrl: c.ORGANISATION_RPC_URL ?? local(c.ORGANISATION_RPC_PORT),
    webhookRpcUrl: c.WEBHOOK_RPC_URL ?? local(c.WEBHOOK_RPC_PORT),
    deliveryRpcUrl: c.DELIVERY_RPC_URL ?? local(c.DELIVERY_RPC_PORT),
    publicUrl: (c.PUBLIC_URL ?? `http://localhost:${c.GATEWAY_PORT}`).replace(/\/+$/, ""),
  };
}

/**
 * A lease must cover several publishes and several polls: a relay renews it
 * once per poll while idle, and starts a publish only while the lease
 * outlasts the publish timeout plus a fifth of the lease (the margin).
 */
export const LEASE_MULTIPLE = 3;

/** Why these outbox timings cannot work together, or undefined when they can. */
export function leaseTimingProblem(t: {
  leaseMs: number;
  pollMs: number;
  publishTimeoutMs: number;
}): string | undefined {
  const needed = LEASE_MULTIPLE * Math.max(t.pollMs, t.publishTimeoutMs);
  if (t.leaseMs < needed) {
    return `must be at least ${LEASE_MULTIPLE} × the larger of the poll interval (${t.pollMs} ms) and the publish timeout (${t.publishTimeoutMs} ms): ${needed} ms or more`;
  }
  return undefined;
}

/** The outbox lease must outlast several polls and publishes (see services/shared/outbox/lease.ts). */
function checkOutboxTimings(c: {
  OUTBOX_LEASE_MS: number;
  OUTBOX_POLL_MS: number;
  OUTBOX_PUBLISH_TIMEOUT_MS: number;
}): void {
  const problem = leaseTimingProblem({
    leaseMs: c.OUTBOX_LEASE_MS,
    pollMs: c.OUTBOX_POLL_MS,
    publishTimeoutMs: c.OUTBOX_PUBLISH_TIMEOUT_MS,
  });
  if (problem) throw new ConfigError("OUTBOX_LEASE_MS", `${c.OUTBOX_LEASE_MS} ${problem}`);
}

/** Standalone processes need the real backends: never a home-made substitute in production. */
export function requireBackends(config: Config, needs: { database?: boolean; nats?: boolean }): void {
  if (needs.database && !config.DATABASE_URL) {
    throw new ConfigError("DATABASE_URL", "required when a service runs as its own process (unset)");
  }
  if (needs.nats && !config.NATS_URL) {
    throw new ConfigError("NATS_URL", "required when a service runs as its own process (unset)");
  }
}

/**
 * Every service and the gateway carry the internal credential, on any
 * RPC_HOST: loopback is no boundary (a DNS-rebinding page in a local browser
 * reaches 127.0.0.1), so an RPC port never accepts an anonymous caller.
 */
export function requireInternalToken(config: Config): void {
  if (config.INTERNAL_RPC_TOKEN.length === 0) {
    throw new ConfigError(
      "INTERNAL_RPC_TOKEN",
      "required: the credential every internal RPC carries, at least 32 characters (unset)",
    );
  }
}

/**
 * The webhook service seals its subscriptions' signing secrets with the
 * first of these keys and opens them with any: it never starts without one.
 */
export function requireSecretEncryptionKey(config: Config): void {
  if (config.WEBHOOK_SECRET_ENCRYPTION_KEY.length === 0) {
    throw new ConfigError(
      "WEBHOOK_SECRET_ENCRYPTION_KEY",
      "required: the key the webhook signing secrets are encrypted with, base64 of 32 random bytes (openssl rand -base64 32) (unset)",
    );
  }
}

// What a platform process checks at start when it runs on its own (services/shared/service-main.ts,
// gateway/main.ts); test/platform/compose-processes.test.ts holds docker-compose.yml to them.
/** A service (auth, organisation, webhook, delivery) as its own process. */
export const SERVICE_PROCESS_CHECKS: ((config: Config) => void)[] = [
  (c) => requireBackends(c, { database: true, nats: true }),
  (c) => requireInternalToken(c),
];
/** The webhook service as its own process: a service's checks and its secrets' key. */
export const WEBHOOK_PROCESS_CHECKS: ((config: Config) => void)[] = [
  ...SERVICE_PROCESS_CHECKS,
  (c) => requireSecretEncryptionKey(c),
];
/** The gateway as its own process (NATS_URL is optional: without it, bearer checks are not cached). */
export const GATEWAY_PROCESS_CHECKS: ((config: Config) => void)[] = [(c) => requireInternalToken(c)];

/** The configuration with these internal credentials (the embedded start's generated one). */
export function withInternalTokens(config: Config, tokens: string[]): Config {
  return { ...config, INTERNAL_RPC_TOKEN: tokens, internalToken: tokens[0] };
}

/** The configuration with these secret encryption keys (the embedded start's generated one). */
export function withSecretEncryptionKeys(config: Config, keys: Buffer[]): Config {
  return { ...config, WEBHOOK_SECRET_ENCRYPTION_KEY: keys };
}

/** One line naming the variable, then exit 1. Anything else is rethrown. */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`configuration error: ${err.message}\n`);
    process.exit(1);
  }
  throw err;
}

/**
 * The configuration of a process that is starting, with its extra checks:
 * on any problem, one line naming the variable and exit 1.
 */
export function loadConfigOrExit(checks: ((config: Config) => void)[] = []): Config {
  try {
    const config = loadConfig();
    for (const check of checks) check(config);
    return config;
  } catch (err) {
    exitOnConfigError(err);
  }
}
