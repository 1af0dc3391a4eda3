// The trace context of a gateway request: the client's W3C traceparent
// continued by the request's span (or a new trace when it sent none, or one
// that is invalid: W3C Trace Context §3.2.2, a vendor MUST NOT fail the request
// for it), passed on every RPC the request makes (rpcOptions, clients.ts) and
// bound to the request's log lines. Kept beside the request, not in an
// AsyncLocalStorage: none on the gateway's hot path.
import type { IncomingMessage } from "node:http";
import {
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  continuedTracestate,
  traceIdOf,
} from "../services/shared/trace/traceparent.js";
import { startSpan, type WorkSpan } from "../services/shared/trace/tracing.js";

export interface RequestTrace {
  span: WorkSpan;
  tracestate: string | undefined;
}

/**
 * The request's trace is kept on the request itself (a symbol property), not
 * in a WeakMap entry set and deleted for every request.
 */
const TRACE = Symbol("request trace");
type Traced = IncomingMessage & { [TRACE]?: RequestTrace };

/** The request's trace, started at its first use. */
export function requestTrace(raw: IncomingMessage): RequestTrace {
  let found = (raw as Traced)[TRACE];
  if (!found) {
    const incoming = raw.headers[TRACEPARENT_HEADER];
    const state = raw.headers[TRACESTATE_HEADER];
    found = {
      span: startSpan(raw.method ?? "HTTP", typeof incoming === "string" ? incoming : undefined, "server", {
        "http.request.method": raw.method ?? "",
      }),
      tracestate: continuedTracestate(
        typeof incoming === "string" ? incoming : undefined,
        typeof state === "string" ? state : undefined,
      ),
    };
    (raw as Traced)[TRACE] = found;
  }
  return found;
}

/** The trace id the request's log lines carry. */
export function requestTraceId(raw: IncomingMessage): string {
  return traceIdOf(requestTrace(raw).span.traceparent);
}

/** The trace headers of an RPC made while serving the request. */
export function traceHeaders(raw: IncomingMessage): Record<string, string> {
  const trace = requestTrace(raw);
  return trace.tracestate
    ? { [TRACEPARENT_HEADER]: trace.span.traceparent, [TRACESTATE_HEADER]: trace.tracestate }
    : { [TRACEPARENT_HEADER]: trace.span.traceparent };
}

/** The answer went out: the request's span ends (a 5xx marks it failed). */
export function endRequestTrace(raw: IncomingMessage, status: number, route: string | undefined): void {
  const trace = (raw as Traced)[TRACE];
  if (!trace) return;
  (raw as Traced)[TRACE] = undefined;
  trace.span.end(status >= 500 ? `HTTP ${status}` : undefined, {
    "http.response.status_code": status,
    ...(route ? { "http.route": route } : {}),
  });
}
