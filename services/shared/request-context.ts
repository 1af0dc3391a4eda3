// The request id and the trace context travel with a request across RPC
// calls: the gateway (or the first RPC server) assigns them, and an
// AsyncLocalStorage keeps them for the calls its handler makes
// (rpc/client.ts), the events it writes (outbox/writer.ts) and its log lines.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { traceIdOf } from "./trace/traceparent.js";

export const REQUEST_ID_HEADER = "x-request-id";

export interface RequestContext {
  requestId: string;
  /** W3C traceparent whose parent id is the span of the work being done (trace/tracing.ts). */
  traceparent?: string;
  /** W3C tracestate as the caller sent it (passed on unchanged). */
  tracestate?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function requestIdFrom(value: string | undefined | null): string {
  return acceptRequestId(value) ?? randomUUID();
}

export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** The trace id of the work being done, for log lines (undefined outside one). */
export function currentTraceId(): string | undefined {
  const traceparent = storage.getStore()?.traceparent;
  return traceparent === undefined ? undefined : traceIdOf(traceparent);
}

export function acceptRequestId(value: string | undefined | null): string | undefined {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined;
}
