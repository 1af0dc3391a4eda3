// The interceptors every RPC server runs: the call's metrics, the internal
// credential, and the request id and trace context with one log line per call
// and errors that never carry internals.
import { hash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import { REQUEST_ID_HEADER, requestIdFrom, runInRequest } from "../request-context.js";
import { TRACEPARENT_HEADER, TRACESTATE_HEADER, continuedTracestate } from "../trace/traceparent.js";
import { rpcServerDuration } from "../metrics/metrics.js";
import { startSpan } from "../trace/tracing.js";
import { INTERNAL_AUTH_HEADER } from "./client.js";
import { isOutage } from "./outage.js";

/** One-shot crypto.hash (Node 20.12+): no Hash object per call. */
const digest = (s: string) => hash("sha256", s, "buffer");

/**
 * Refuses, with UNAUTHENTICATED, every call without one of the internal
 * credentials. Constant-time: the presented value's digest is compared with
 * every accepted one's, all of them each time, so nothing tells which matched.
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
 * Request id and trace context, and one log line per call (debug on success).
 * Unexpected errors become INTERNAL; a backend's outage (outage.ts), thrown as
 * is or as a fault's cause, UNAVAILABLE: the gateway answers 503 with Retry-After.
 */
export function contextInterceptor(logger: Logger): Interceptor {
  return (next) => (req) => {
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    const procedure = `${req.service.typeName}/${req.method.name}`;
    const span = startSpan(procedure, req.header.get(TRACEPARENT_HEADER), "server", {
      "rpc.system": "connect_rpc",
      "rpc.service": req.service.typeName,
      "rpc.method": req.method.name,
    });
    const tracestate = continuedTracestate(req.header.get(TRACEPARENT_HEADER), req.header.get(TRACESTATE_HEADER));
    return runInRequest({ requestId, traceparent: span.traceparent, tracestate }, async () => {
      const started = performance.now();
      const line = (code: string | undefined) => ({
        requestId,
        procedure,
        code,
        ms: Math.round(performance.now() - started),
      });
      try {
        const res = await next(req);
        span.end();
        if (logger.isLevelEnabled("debug")) logger.debug(line("ok"), "rpc");
        return res;
      } catch (thrown) {
        let err = thrown;
        const fault = !(err instanceof ConnectError) || SERVER_FAULTS.has(err.code);
        // A caller's mistake is not this span's failure.
        span.end(fault ? thrown : undefined, {
          "rpc.connect_rpc.error_code": err instanceof ConnectError ? Code[err.code]! : "Internal",
        });
        if (fault && isOutage(err)) {
          const cause = err instanceof ConnectError ? (err.cause ?? err) : err;
          err = new ConnectError("a backend is unavailable", Code.Unavailable, undefined, undefined, cause);
        }
        if (!(err instanceof ConnectError)) {
          logger.error({ ...line("Internal"), err }, "rpc");
          throw new ConnectError("internal error", Code.Internal);
        }
        const fields = line(Code[err.code]);
        if (SERVER_FAULTS.has(err.code)) logger.error({ ...fields, err: err.cause ?? err }, "rpc");
        else if (OUTAGES.has(err.code))
          logger.warn({ ...fields, message: err.rawMessage, err: err.cause ?? err }, "rpc");
        else logger.info({ ...fields, message: err.rawMessage }, "rpc");
        throw err;
      }
    });
  };
}

/** rpc_server_duration_seconds, as the outermost interceptor: each call counted with the code the caller saw. */
/** Code → the Connect protocol's name for it ("not_found"), made once. */
const CODE_NAMES = new Map<Code, string>(
  Object.values(Code)
    .filter((c): c is Code => typeof c === "number")
    .map((c) => [c, Code[c]!.replace(/[A-Z]/g, (m, i: number) => (i ? "_" : "") + m.toLowerCase())]),
);

export function metricsInterceptor(service: string): Interceptor {
  // Not an async function: one promise per call (then's), not an async frame's too.
  return (next) => (req) => {
    const started = performance.now();
    const method = req.method.name;
    const observe = (code: string) =>
      rpcServerDuration.observe({ service, method, code }, (performance.now() - started) / 1000);
    let answer;
    try {
      answer = next(req);
    } catch (err) {
      answer = Promise.reject(err);
    }
    return answer.then(
      (res) => (observe("ok"), res),
      (err: unknown) => {
        observe(CODE_NAMES.get(ConnectError.from(err).code) ?? "unknown");
        throw err;
      },
    );
  };
}
