// Configuration comes from environment variables, read and validated once at
// start. A bad or missing value stops the process with one line that names
// the variable (see `exitOnConfigError`). docs/configuration.md documents each.
import { z } from "zod";
import { bool, int, isAddressOrCidr, isDnsServer, keys256, list, optionalUrl, origins, port } from "./config-fields.js";

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
  // OAuth (the auth service and the gateway's pages).
  OAUTH_ALLOW_INSECURE_REDIRECTS: bool(false),
  OAUTH_CLIENT_METADATA_DOCUMENTS: bool(true),
  OAUTH_CLIENT_METADATA_TIMEOUT_MS: int(5000, 100, 60_000),
  OAUTH_CLIENT_METADATA_CA_FILE: z
    .string()
    .optional()
    .transform((v) => v?.trim() || undefined),
  OAUTH_DYNAMIC_REGISTRATION: bool(false),
  OAUTH_REGISTRATION_LIMIT: int(20, 1, 1_000_000),
  MCP_ALLOWED_ORIGINS: origins(),
  OAUTH_CLIENT_METADATA_FETCH_LIMIT: int(30, 1, 1_000_000),
  ACCESS_TOKEN_TTL_SECONDS: int(3600, 60, 86_400),
  REFRESH_TOKEN_TTL_SECONDS: int(180 * 86_400, 3600, 730 * 86_400),
  AUTHORIZATION_CODE_TTL_SECONDS: int(60, 10, 600),
  REFRESH_RETRY_WINDOW_SECONDS: int(30, 0, 300),
  INTERACTION_TTL_SECONDS: int(600, 60, 3600),
  SESSION_TTL_SECONDS: int(8 * 3600, 300, 30 * 86_400),
  RATE_LIMIT_LOGIN_FAILURES: int(10, 1, 100_000),
  RATE_LIMIT_CLIENT_AUTH_FAILURES: int(10, 1, 100_000),
  RATE_LIMIT_ADDRESS_FAILURES: int(100, 1, 1_000_000),
  // Webhook subscriptions (the webhook service) and their delivery (the delivery service).
  WEBHOOK_ALLOW_INSECURE_TARGETS: bool(false),
  WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR: int(100, 1, 100_000),
  WEBHOOK_DNS_TIMEOUT_MS: int(3000, 100, 30_000),
  WEBHOOK_DNS_SERVERS: list(
    z.string().refine(isDnsServer, "expected IP addresses with optional ports, comma-separated"),
  ),
  WEBHOOK_SECRET_OVERLAP_SECONDS: int(86_400, 0, 30 * 86_400),
  /** The first encrypts, every one decrypts (secret-box.ts). Never echoed in an error. */
  WEBHOOK_SECRET_ENCRYPTION_KEY: keys256(),
  DELIVERY_RETRY_SCHEDULE_SECONDS: z
    .string()
    .default("5,30,120,600,1800,7200,21600,43200")
    .transform((v) => v.split(",").map((s) => s.trim()))
    .pipe(
      z
        .array(z.string().regex(/^\d{1,6}(\.\d{1,3})?$/, "expected seconds separated by commas, e.g. 5,30,120"))
        .min(1)
        .max(50)
        .transform((list) => list.map(Number)),
    ),
  DELIVERY_RETRY_AFTER_MAX_SECONDS: int(3600, 0, 86_400),
  DELIVERY_TIMEOUT_MS: int(10_000, 100, 120_000),
  /** Enough for 32 subscriptions at their cap of 4: with every slot taken no POST can hand its slot on (hand-on.ts). */
  DELIVERY_CONCURRENCY: int(128, 1, 1000),
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: int(4, 1, 1000),
  DELIVERY_SUBSCRIBER_CACHE_MS: int(10_000, 0, 300_000),
  DELIVERY_POLL_MS: int(500, 10, 60_000),
  DELIVERY_CLAIM_LEASE_SECONDS: int(60, 5, 3600),
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: int(5 * 86_400, 0, 365 * 86_400),
  WEBHOOK_DISABLE_AFTER_FAILURES: int(10, 1, 100_000),
  // The platform.
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  LOG_FORMAT: z.enum(["json", "pretty"]).optional(),
  DATABASE_URL: optionalUrl(["postgres:", "postgresql:"]),
  DATABASE_POOL_MAX: int(10, 1, 200),
  MIGRATE_ON_START: bool(true),
  NATS_URL: z
    .string()
    .optional()
    .transform((v) => v || undefined)
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
  NATS_DUPLICATE_WINDOW_SECONDS: int(900, 10, 86_400),
  /** A service accepts any and sends the first (rotation without downtime). Never echoed in an error. */
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
  GATEWAY_METRICS_PORT: port(9464),
  /** Proxies whose X-Forwarded-For is believed: addresses, not a hop count (which trusts whoever connects). */
  GATEWAY_TRUSTED_PROXIES: list(
    z.string().refine(isAddressOrCidr, "expected IP addresses or CIDR ranges, comma-separated"),
  ),
  PUBLIC_URL: optionalUrl(["http:", "https:"]),
  DATA_DIR: z.string().min(1).default("./data"),
  OUTBOX_POLL_MS: int(1000, 10, 60_000),
  /** How long a dead relay's lease blocks the next one (leaseTimingProblem). */
  OUTBOX_LEASE_MS: int(15_000, 500, 300_000),
  OUTBOX_PUBLISH_TIMEOUT_MS: int(3000, 100, 60_000),
  BEARER_CACHE_MS: int(30_000, 0, 600_000),
  GATEWAY_REQUEST_TIMEOUT_MS: int(10_000, 100, 600_000),
  GATEWAY_HEADERS_TIMEOUT_MS: int(5_000, 100, 600_000),
  GATEWAY_KEEP_ALIVE_TIMEOUT_MS: int(72_000, 100, 600_000),
  PRUNE_INTERVAL_SECONDS: int(600, 1, 86_400),
  PRUNE_BATCH_SIZE: int(500, 1, 100_000),
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
    throw new ConfigError(variable, env[variable] === undefined ? `${issue.message} (unset)` : issue.message);
  }
  const c = parsed.data;
  const lease = leaseTimingProblem({
    leaseMs: c.OUTBOX_LEASE_MS,
    pollMs: c.OUTBOX_POLL_MS,
    publishTimeoutMs: c.OUTBOX_PUBLISH_TIMEOUT_MS,
  });
  if (lease) throw new ConfigError("OUTBOX_LEASE_MS", `${c.OUTBOX_LEASE_MS} ${lease}`);
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

/** A relay renews once per poll while idle, and starts a publish only while the lease outlasts it plus a margin. */
const LEASE_MULTIPLE = 3;

/** Why these outbox timings cannot work together (services/shared/outbox/lease.ts), or undefined when they can. */
export function leaseTimingProblem(t: {
  leaseMs: number;
  pollMs: number;
  publishTimeoutMs: number;
}): string | undefined {
  const needed = LEASE_MULTIPLE * Math.max(t.pollMs, t.publishTimeoutMs);
  if (t.leaseMs >= needed) return undefined;
  return `must be at least ${LEASE_MULTIPLE} × the larger of the poll interval (${t.pollMs} ms) and the publish timeout (${t.publishTimeoutMs} ms): ${needed} ms or more`;
}

/** Standalone processes need the real backends: never a home-made substitute in production. */
export function requireBackends(config: Config, needs: { database?: boolean; nats?: boolean }): void {
  for (const [variable, needed] of [
    ["DATABASE_URL", needs.database && !config.DATABASE_URL],
    ["NATS_URL", needs.nats && !config.NATS_URL],
  ] as const) {
    if (needed) throw new ConfigError(variable, "required when a service runs as its own process (unset)");
  }
}

/** RPC ports refuse anonymous callers on any host: a DNS-rebinding page in a local browser reaches 127.0.0.1. */
export function requireInternalToken(config: Config): void {
  if (config.INTERNAL_RPC_TOKEN.length > 0) return;
  throw new ConfigError(
    "INTERNAL_RPC_TOKEN",
    "required: the credential every internal RPC carries, at least 32 characters (unset)",
  );
}

/** The webhook service seals its subscriptions' signing secrets with these keys: it never starts without one. */
export function requireSecretEncryptionKey(config: Config): void {
  if (config.WEBHOOK_SECRET_ENCRYPTION_KEY.length > 0) return;
  throw new ConfigError(
    "WEBHOOK_SECRET_ENCRYPTION_KEY",
    "required: the key the webhook signing secrets are encrypted with, base64 of 32 random bytes (openssl rand -base64 32) (unset)",
  );
}

type Check = (config: Config) => void;
// What a platform process checks at start when it runs on its own (and docker-compose.yml provides).
export const SERVICE_PROCESS_CHECKS: Check[] = [
  (c) => requireBackends(c, { database: true, nats: true }),
  requireInternalToken,
];
export const WEBHOOK_PROCESS_CHECKS: Check[] = [...SERVICE_PROCESS_CHECKS, requireSecretEncryptionKey];
/** NATS_URL is optional for the gateway: without it, bearer checks are not cached. */
export const GATEWAY_PROCESS_CHECKS: Check[] = [requireInternalToken];

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

/** The configuration of a starting process, after its checks; on any problem, exitOnConfigError. */
export function loadConfigOrExit(checks: Check[] = []): Config {
  try {
    const config = loadConfig();
    for (const check of checks) check(config);
    return config;
  } catch (err) {
    exitOnConfigError(err);
  }
}
