// One POST of one event to one target, Standard Webhooks style. CONTRACT:
// "`POST` to target_url, `Content-Type: application/json` … Headers
// `webhook-id` (the event's id, the same on every retry),
// `webhook-timestamp`, `webhook-signature` … as the `standardwebhooks`
// libraries verify." The signature is signature.ts's, which the tests hold to
// that library's own sign() and verify with its verify().
// After a secret rotation, two signatures while the old secret's overlap lasts.
//
// Sent through an undici Agent whose connect-time lookup refuses non-public
// destinations (services/shared/net/safe-lookup.ts); redirects are not
// followed (undici's dispatch follows none: a 3xx is an answer like any other
// non-2xx); the whole attempt, connect to the end of the body, is bounded by
// one timeout, and at most MAX_RESPONSE_BYTES of the answer are read, then
// dropped (attempt-handler.ts).
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

export interface OutgoingWebhook {
  url: string;
  /** Standard Webhooks secret, "whsec_…". */
  secret: string;
  /**
   * The secret before the subscription's last rotation, while it still signs:
   * a second signature, made with it, follows the first until expiresAt.
   */
  previousSecret?: { secret: string; expiresAt: Date };
  eventId: string;
  /** The JSON body, exactly as stored at fan-out. */
  body: string;
  /**
   * W3C traceparent sent as the header of that name: the event's trace,
   * with this attempt as the parent, so a receiver can correlate.
   */
  traceparent?: string;
  /** W3C tracestate sent beside it, unchanged (only with a traceparent). */
  tracestate?: string;
}

/** The secrets a subscriber signs with (ListSubscribers): its secret, and the one before its last rotation while that still signs. */
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

export interface WebhookSender {
  send(webhook: OutgoingWebhook): Promise<SendResult>;
  close(): Promise<void>;
}

export interface SenderOptions {
  resolve: Resolver;
  /** http and private destinations allowed (development, tests). */
  allowInsecure: boolean;
  timeoutMs: number;
}

export function createWebhookSender(options: SenderOptions): WebhookSender {
  const agent = new Agent({
    connect: { lookup: safeLookup(options.resolve, options.allowInsecure), timeout: options.timeoutMs },
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 4000,
  });
  return {
    async send(webhook) {
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
    close: () => agent.close(),
  };
}

const timeoutError = (timeoutMs: number) => `timeout: no complete answer within ${timeoutMs} ms`;

/**
 * Standard Webhooks: "To achieve this, the webhook is signed both using the
 * current key, and using an old key (for a set period of time), and both
 * signatures are sent, space delimited, in the `webhook-signature` header."
 * The new secret's first, then the old one's while the rotation's overlap lasts.
 */
function signatures(webhook: OutgoingWebhook, timestamp: Date): string {
  const sign = (secret: string) => signWith(secret, webhook.eventId, timestamp, webhook.body);
  const previous = webhook.previousSecret;
  return previous && previous.expiresAt > timestamp
    ? `${sign(webhook.secret)} ${sign(previous.secret)}`
    : sign(webhook.secret);
}

function classify(err: unknown, timeoutMs: number): { kind: "timeout" | "refused" | "network"; error: string } {
  for (
    let e = err as { code?: string; name?: string; message?: string; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e instanceof DestinationRefusedError || e.code === "ERR_DESTINATION_REFUSED")
      return { kind: "refused", error: `refused: ${e.message}` };
  }
  const e = err as { code?: string; name?: string; message?: string };
  if (
    e?.name === "TimeoutError" ||
    e?.code === "UND_ERR_CONNECT_TIMEOUT" ||
    e?.code === "UND_ERR_HEADERS_TIMEOUT" ||
    e?.code === "UND_ERR_BODY_TIMEOUT"
  ) {
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
