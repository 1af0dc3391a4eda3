// One POST of one event to one target. CONTRACT: "`POST` to target_url,
// `Content-Type: application/json` … Headers `webhook-id` (the event's id, the
// same on every retry), `webhook-timestamp`, `webhook-signature` … as the
// `standardwebhooks` libraries verify."
//
// Through an undici Agent whose connect-time lookup refuses non-public
// destinations (shared/net/safe-lookup.ts); no redirect is followed (a 3xx is
// a failure like any non-2xx); one timeout bounds the attempt (attempt-handler.ts).
import { performance } from "node:perf_hooks";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Agent } from "undici";
import type { Subscriber } from "../../../gen/bizcard/webhook/v1/webhook_pb.js";
import type { Resolver } from "../../shared/net/dns-resolver.js";
import { DestinationRefusedError, checkLiteralHost, safeLookup } from "../../shared/net/safe-lookup.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from "../../shared/trace/traceparent.js";
import { AttemptHandler, type AttemptAnswer } from "./attempt-handler.js";
import { sign as signWith } from "./signature.js";

const MAX_RESPONSE_BYTES = 64 * 1024;
const USER_AGENT = "bizcard-webhooks/1";

interface OutgoingWebhook {
  url: string;
  /** Standard Webhooks secret, "whsec_…". */
  secret: string;
  /** The secret before the last rotation: a second signature until expiresAt. */
  previousSecret?: { secret: string; expiresAt: Date };
  eventId: string;
  /** The JSON body, exactly as stored at fan-out. */
  body: string;
  /** W3C trace context headers (tracestate only with a traceparent). */
  traceparent?: string;
  tracestate?: string;
}

/**
 * The secrets a subscriber signs with (ListSubscribers): its secret, and
 * the one before its last rotation while that still signs.
 */
export function signingSecrets(subscriber: Subscriber): Pick<OutgoingWebhook, "secret" | "previousSecret"> {
  const { previousSecret, previousSecretExpireTime } = subscriber;
  return {
    secret: subscriber.secret,
    ...(previousSecret && previousSecretExpireTime
      ? { previousSecret: { secret: previousSecret, expiresAt: timestampDate(previousSecretExpireTime) } }
      : {}),
  };
}

export type SendResult =
  | { ok: true; status: number; durationMs: number }
  | {
      ok: false;
      /** 0 when no answer came. */
      status: number;
      durationMs: number;
      kind: "http" | "timeout" | "refused" | "network";
      error: string;
      /** The answer's Retry-After, in ms, when it had one. */
      retryAfterMs?: number;
    };

export type WebhookSender = ReturnType<typeof createWebhookSender>;

/** `allowInsecure`: http and private destinations allowed (development, tests). */
export function createWebhookSender(options: { resolve: Resolver; allowInsecure: boolean; timeoutMs: number }) {
  const agent = new Agent({
    connect: { lookup: safeLookup(options.resolve, options.allowInsecure), timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 4000,
  });
  return {
    async send(webhook: OutgoingWebhook): Promise<SendResult> {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      let answer: AttemptAnswer;
      try {
        const url = new URL(webhook.url);
        if (url.protocol !== "https:" && !(options.allowInsecure && url.protocol === "http:")) {
          throw new DestinationRefusedError(`${url.protocol} targets are not allowed`);
        }
        checkLiteralHost(url, options.allowInsecure);
        const timestamp = new Date();
        const headers: Record<string, string> = {
          "content-type": "application/json",
          "user-agent": USER_AGENT,
          "webhook-id": webhook.eventId,
          "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
          "webhook-signature": signatures(webhook, timestamp),
        };
        if (webhook.traceparent) {
          headers[TRACEPARENT_HEADER] = webhook.traceparent;
          if (webhook.tracestate) headers[TRACESTATE_HEADER] = webhook.tracestate;
        }
        answer = await new Promise<AttemptAnswer>((resolve) => {
          const handler = new AttemptHandler(resolve, options.timeoutMs, MAX_RESPONSE_BYTES);
          agent.dispatch(
            { origin: url.origin, path: url.pathname + url.search, method: "POST", headers, body: webhook.body },
            handler,
          );
        });
      } catch (err) {
        answer = { kind: "error", error: err as Error };
      }
      if (answer.kind === "timeout")
        return { ok: false, status: 0, durationMs: elapsed(), kind: "timeout", error: timeoutError(options.timeoutMs) };
      if (answer.kind === "error")
        return { ok: false, status: 0, durationMs: elapsed(), ...classify(answer.error, options.timeoutMs) };
      const { status } = answer;
      if (status >= 200 && status < 300) return { ok: true, status, durationMs: elapsed() };
      const retryAfterMs = parseRetryAfter(answer.retryAfter);
      return {
        ok: false,
        status,
        durationMs: elapsed(),
        kind: "http",
        error: `HTTP ${status}`,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      };
    },
    close: (): Promise<void> => agent.close(),
  };
}

const timeoutError = (timeoutMs: number) => `timeout: no complete answer within ${timeoutMs} ms`;

/**
 * Standard Webhooks: "both signatures are sent, space delimited, in the
 * `webhook-signature` header." The new secret's first.
 */
function signatures(webhook: OutgoingWebhook, timestamp: Date): string {
  const sign = (secret: string) => signWith(secret, webhook.eventId, timestamp, webhook.body);
  const previous = webhook.previousSecret;
  return previous && previous.expiresAt > timestamp
    ? `${sign(webhook.secret)} ${sign(previous.secret)}`
    : sign(webhook.secret);
}

type Failure = { code?: string; name?: string; message?: string; cause?: unknown } | undefined;
const TIMEOUT_CODES = new Set(["UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

function classify(err: unknown, timeoutMs: number): { kind: "timeout" | "refused" | "network"; error: string } {
  // A refusal may come wrapped (undici's connect error has the lookup's as its cause).
  for (let e = err as Failure, depth = 0; e && depth < 5; e = e.cause as Failure, depth++) {
    if (e instanceof DestinationRefusedError || e.code === "ERR_DESTINATION_REFUSED")
      return { kind: "refused", error: `refused: ${e.message}` };
  }
  const e = err as Failure;
  if (e?.name === "TimeoutError" || TIMEOUT_CODES.has(e?.code ?? "")) {
    return { kind: "timeout", error: timeoutError(timeoutMs) };
  }
  return {
    kind: "network",
    error: `network: ${e?.code ? `${e.code} ` : ""}${e?.message ?? String(err)}`.slice(0, 500),
  };
}

/** RFC 9110 §10.2.3: Retry-After = HTTP-date / delay-seconds. */
export function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
