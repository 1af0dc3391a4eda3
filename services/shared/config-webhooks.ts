// The webhook settings of the configuration (config.ts): subscriptions (the
// webhook service) and their delivery (the delivery service).
import { z } from "zod";
import { bool, int, keys256 } from "./config-fields.js";
import { isDnsServer } from "./net/address-syntax.js";

export const webhookSettings = {
  /** Allow http and private/loopback webhook targets (development and tests only). */
  WEBHOOK_ALLOW_INSECURE_TARGETS: bool(false),
  // Webhook subscriptions (the webhook service).
  /** The most subscriptions one (organisation, client application) pair may have; a create past it is a 400. */
  WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR: int(100, 1, 100_000),
  /**
   * The longest a target_url's DNS lookup (A and AAAA, c-ares) may take, when a
   * subscription is saved (past it, 503) and when a delivery connects (past it, a failed attempt).
   */
  WEBHOOK_DNS_TIMEOUT_MS: int(3000, 100, 30_000),
  /** DNS servers for those lookups, at save and delivery time alike ("ip" or "ip:port" or "[ipv6]:port", comma-separated); unset: the system's (resolv.conf). */
  WEBHOOK_DNS_SERVERS: z
    .string()
    .optional()
    .transform((v) =>
      (v ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().refine(isDnsServer, "expected IP addresses with optional ports, comma-separated"))),
  /**
   * After a subscription's secret is rotated, how long its old secret keeps
   * signing too (each POST then carries two signatures, new and old), so that
   * a receiver can switch at its pace. 0: the old secret stops at once. At most 30 days.
   */
  WEBHOOK_SECRET_OVERLAP_SECONDS: int(86_400, 0, 30 * 86_400),
  /**
   * The keys the subscriptions' signing secrets are encrypted with at rest
   * (AES-256-GCM; services/webhook/subscriptions/secret-box.ts), comma-separated,
   * each base64 of 32 random bytes: the first encrypts, every one decrypts, so
   * a new key goes first and the old ones stay listed until
   * `bizcard secrets reencrypt` has sealed every secret under the new one.
   * Parsed to the keys. Required by the webhook service (`npm start`: generated
   * into DATA_DIR when unset). Never echoed in an error.
   */
  WEBHOOK_SECRET_ENCRYPTION_KEY: keys256(),
  // Webhook delivery (services/delivery).
  /**
   * Delivery: the waits before each retry, in seconds (decimals allowed), after
   * the first attempt fails; each is stretched or shrunk by up to 20 % (jitter).
   * When all have failed, the delivery gives up. The default spans about 21 hours.
   */
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
  /** Delivery: a target's Retry-After is honoured up to this many seconds. */
  DELIVERY_RETRY_AFTER_MAX_SECONDS: int(3600, 0, 86_400),
  /** Delivery: the whole of one POST (connect, answer, body), in ms; past it the attempt is a timeout. */
  DELIVERY_TIMEOUT_MS: int(10_000, 100, 120_000),
  /**
   * Delivery: POSTs in flight at once per delivery process. Enough for 32
   * subscriptions at the default per-subscription cap of 4: a lower limit
   * holds busy organisations back before their targets do, and with every
   * slot taken no finished POST can hand its slot on (hand-on.ts), so each
   * takes a claim of its own.
   */
  DELIVERY_CONCURRENCY: int(128, 1, 1000),
  /**
   * Delivery: the most POSTs in flight to one subscription at once, across
   * every delivery process (counted in the database at each claim), so a slow
   * or hanging target holds at most this many of the workers' slots.
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_SUBSCRIPTION: int(4, 1, 1000),
  /**
   * Delivery: how long a worker keeps the subscribers it read (target,
   * secrets) for its next POSTs; every change of a subscription drops them at
   * once (announced on the bus), so this only bounds an announcement missed.
   * 0: read them for every claimed batch.
   */
  DELIVERY_SUBSCRIBER_CACHE_MS: int(10_000, 0, 300_000),
  /** Delivery: how often an idle worker looks for due deliveries (new events wake it at once in its own process). */
  DELIVERY_POLL_MS: int(500, 10, 60_000),
  /**
   * Delivery: a claimed delivery returns to the others after this long if its
   * worker died; more than DELIVERY_TIMEOUT_MS plus the time to record the attempt.
   */
  DELIVERY_CLAIM_LEASE_SECONDS: int(60, 5, 3600),
  // Disabling a subscription that only fails (services/delivery/deliveries/failure-streak.ts).
  /**
   * Delivery: a subscription whose every attempt has failed for this long (no
   * success since, and none since its owner last changed or re-enabled it) is
   * disabled: shown with disabled_at and disabled_reason, sent nothing until a
   * PUT re-enables it. 0 never disables. Default 5 days: longer than one
   * delivery's retry schedule, so a receiver down over a long weekend is kept.
   */
  WEBHOOK_DISABLE_AFTER_FAILING_SECONDS: int(5 * 86_400, 0, 365 * 86_400),
  /** Delivery: and at least this many failed attempts in that streak (a rarely-used subscription is not disabled on two failures). */
  WEBHOOK_DISABLE_AFTER_FAILURES: int(10, 1, 100_000),
};
