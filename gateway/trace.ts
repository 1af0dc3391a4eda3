// The trace context of a request: the client's W3C traceparent continued by
// its span (an invalid one starts a new trace, never fails the request),
// passed on every RPC and bound to its log lines. Kept on the request, not in
// an AsyncLocalStorage: nothing of the kind on the hot path.
import type { IncomingMessage } from "node:http";
import {
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  continuedTracestate,
  traceIdOf,
} from "../services/shared/trace/traceparent.js";
import { startSpan, type WorkSpan } from "../services/shared/trace/tracing.js";

interface RequestTrace {
  span: WorkSpan;
  tracestate: string | undefined;
}

const TRACE = Symbol("request trace");
type Traced = IncomingMessage & { [TRACE]?: RequestTrace };

/** The request's trace, started at its first use. */
export function requestTrace(raw: IncomingMessage): RequestTrace {
  let found = (raw as Traced)[TRACE];
  if (!found) {
    const header = (name: string) => {
      const value = raw.headers[name];
      return typeof value === "string" ? value : undefined;
    };
    const incoming = header(TRACEPARENT_HEADER);
    found = {
      span: startSpan(raw.method ?? "HTTP", incoming, "server", { "http.request.method": raw.method ?? "" }),
      tracestate: continuedTracestate(incoming, header(TRACESTATE_HEADER)),
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
