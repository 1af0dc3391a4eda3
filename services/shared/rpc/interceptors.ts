// The interceptors every RPC server runs: the internal credential, and the
// request id and trace context with one log line per call and errors that
// never carry internals.
import { hash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import { REQUEST_ID_HEADER, requestIdFrom, runInRequest } from "../request-context.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER, continuedTracestate } from "../trace/traceparent.js";
import { startSpan } from "../trace/tracing.js";
import { INTERNAL_AUTH_HEADER } from "./client.js";
import { isOutage } from "./outage.js";

/** One-shot crypto.hash (Node 20.12+): no Hash object per call. */
const digest = (s: string) => hash("sha256", s, "buffer");

/**
 * Refuses, with UNAUTHENTICATED, every call that does not carry one of the
 * internal credentials. The comparison is constant-time: the presented value
 * is hashed once and compared with the digest of every accepted credential,
 * all of them each time, so neither the timing nor an early exit tells which
 * one (if any) matched.
 */
export function internalAuthInterceptor(tokens: readonly string[]): Interceptor {
  if (tokens.length === 0 || tokens.some((t) => t.length === 0)) {
    throw new Error("internalAuthInterceptor: at least one non-empty internal credential is required");
  }
  const accepted = tokens.map((t) => digest(`Bearer ${t}`));
  // Not an async function: a call let through costs no promise of its own.
  return (next) => (req) => {
    const given = digest(req.header.get(INTERNAL_AUTH_HEADER) ?? "");
    let matched = false;
    for (const expected of accepted) matched = timingSafeEqual(given, expected) || matched;
    if (!matched) {
      return Promise.reject(new ConnectError("internal credential missing or wrong", Code.Unauthenticated));
    }
    return next(req);
  };
}

/** Codes that mean the server failed (not the caller): logged at error, with the cause. */
const SERVER_FAULTS = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);
/** Codes of a backend or a downstream service being slow or away: logged at warn, with the cause. */
const OUTAGES = new Set([Code.Unavailable, Code.DeadlineExceeded, Code.Canceled]);

/**
 * Request id and trace context (the caller's traceparent continued by this
 * call's span; W3C Trace Context §3.2.2: an invalid one is not a reason to
 * fail, a new trace starts instead), one log line per call, and unexpected errors turned into INTERNAL
 * with the cause logged. A call that succeeds is logged at debug (at info, the
 * line cost more than the read it described); an expected failure (a caller's
 * mistake, NotFound, Unimplemented, …) is one info line with its code and
 * message and no stack; an outage (Unavailable, DeadlineExceeded, Canceled) is
 * a warn line with its cause; a server fault is logged at error with its cause.
 *
 * A failure that is a backend's outage (the database or the bus unreachable,
 * outage.ts), thrown as it is or as the cause of a server fault, is answered
 * UNAVAILABLE: the caller may retry, and the gateway answers 503 with
 * Retry-After instead of 500.
 */
export function contextInterceptor(logger: Logger): Interceptor {
  return (next) => (req) => {
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    const span = startSpan(`${req.service.typeName}/${req.method.name}`, req.header.get(TRACEPARENT_HEADER), "server", {
      "rpc.system": "connect_rpc",
      "rpc.service": req.service.typeName,
      "rpc.method": req.method.name,
    });
    const tracestate = continuedTracestate(req.header.get(TRACEPARENT_HEADER), req.header.get(TRACESTATE_HEADER));
    return runInRequest({ requestId, traceparent: span.traceparent, tracestate }, async () => {
      const started = performance.now();
      try {
        const res = await next(req);
        span.end();
        if (logger.isLevelEnabled("debug")) logger.debug(line(req, requestId, "ok", started), "rpc");
        return res;
      } catch (thrown) {
        let err = thrown;
        const fault = !(err instanceof ConnectError) || SERVER_FAULTS.has(err.code);
        // A caller's mistake is not this span's failure.
        span.end(fault ? thrown : undefined, {
          "rpc.connect_rpc.error_code": err instanceof ConnectError ? Code[err.code]! : "Internal",
        });
        if (fault && isOutage(err)) {
          err = new ConnectError(
            "a backend is unavailable",
            Code.Unavailable,
            undefined,
            undefined,
            err instanceof ConnectError ? (err.cause ?? err) : err,
          );
        }
        if (!(err instanceof ConnectError)) {
          logger.error({ ...line(req, requestId, "Internal", started), err }, "rpc");
          throw new ConnectError("internal error", Code.Internal);
        }
        if (SERVER_FAULTS.has(err.code)) {
          logger.error({ ...line(req, requestId, Code[err.code], started), err: err.cause ?? err }, "rpc");
        } else if (OUTAGES.has(err.code)) {
          logger.warn(
            { ...line(req, requestId, Code[err.code], started), message: err.rawMessage, err: err.cause ?? err },
            "rpc",
          );
        } else {
          logger.info({ ...line(req, requestId, Code[err.code], started), message: err.rawMessage }, "rpc");
        }
        throw err;
      }
    });
  };
}

function line(
  req: { service: { typeName: string }; method: { name: string } },
  requestId: string,
  code: string | undefined,
  started: number,
) {
  return {
    requestId,
    procedure: `${req.service.typeName}/${req.method.name}`,
    code,
    ms: Math.round(performance.now() - started),
  };
}
