// The request id and the trace context travel with a request across RPC
// calls: the gateway (or the first RPC server) assigns them, interceptors copy
// them into the next call.
//
// What the request being served goes by is kept in an AsyncLocalStorage for
// the calls its handler makes (rpc/client.ts reads it), the events it writes
// (outbox/writer.ts) and its log lines (logger.ts). In every process, not only
// those that call other services: MikroORM's own AsyncLocalStorage
// (TransactionContext, em.transactional) turns Node 20's promise hooks on for
// the whole process at a service's first transaction anyway, so leaving it out
// would save nothing.
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

/** The id a request goes by: the caller's when acceptable, else a new one. */
export function requestIdFrom(value: string | undefined | null): string {
  return acceptRequestId(value) ?? randomUUID();
}

/**
 * Runs `fn` as the request `requestId` (an id already accepted, see
 * requestIdFrom): calls to other services made inside carry it.
 */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

/** Runs `fn` in `context`: calls, events and log lines made inside carry its ids. */
export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The id of the request being served (undefined outside one). */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** The request being served (undefined outside one). */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** The trace id of the work being done, for log lines (undefined outside one). */
export function currentTraceId(): string | undefined {
  const traceparent = storage.getStore()?.traceparent;
  return traceparent === undefined ? undefined : traceIdOf(traceparent);
}

/** An incoming id is kept only when it is short and printable; otherwise a new one is made. */
export function acceptRequestId(value: string | undefined | null): string | undefined {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined;
}
