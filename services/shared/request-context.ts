// The request id travels with a request across RPC calls: the gateway (or the
// first RPC server) assigns it, interceptors copy it into the next call.
//
// The id of the request being served is kept in an AsyncLocalStorage for the
// calls its handler makes (rpc/client.ts reads it). Measured on this project's
// machine (GetOrganisation, service in its own process, CPU per call on both
// sides, several rounds): keeping it only in processes that call other
// services saved nothing measurable, because MikroORM's own AsyncLocalStorage
// (TransactionContext, em.transactional) turns Node 20's promise hooks on for
// the whole process at a service's first transaction anyway.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

export const REQUEST_ID_HEADER = "x-request-id";

interface RequestContext {
  requestId: string;
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

/** The id of the request being served (undefined outside one). */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** An incoming id is kept only when it is short and printable; otherwise a new one is made. */
export function acceptRequestId(value: string | undefined | null): string | undefined {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined;
}
