// The request id travels with a request across RPC calls: the gateway (or the
// first RPC server) assigns it, interceptors copy it into the next call.
//
// The id of the request being served is kept in an AsyncLocalStorage only in a
// process that calls other services (one that made an RPC client: see
// needRequestContext), because that is the only reader of currentRequestId.
// On Node 20 the first AsyncLocalStorage.run() turns on promise hooks for the
// whole process, and from then on every promise (pg's, knex's, connect's) pays
// for them: about 0.1-0.2 ms of CPU per call on this project's machines. A
// service that calls nobody (organisation) never turns them on; its log lines
// take the id from the call itself (rpc-server.ts).
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

export const REQUEST_ID_HEADER = "x-request-id";

interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();
let kept = false;

/** Called by createRpcClient: from now on, served requests keep their id for the calls they make. */
export function needRequestContext(): void {
  kept = true;
}

/** The id a request goes by: the caller's when acceptable, else a new one. */
export function requestIdFrom(value: string | undefined | null): string {
  return acceptRequestId(value) ?? randomUUID();
}

/**
 * Runs `fn` as the request `requestId` (an id already accepted, see
 * requestIdFrom): calls to other services made inside carry it.
 */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return kept ? storage.run({ requestId }, fn) : fn();
}

/** The id of the request being served, in a process that calls other services (else undefined). */
export function currentRequestId(): string | undefined {
  return kept ? storage.getStore()?.requestId : undefined;
}

/** An incoming id is kept only when it is short and printable; otherwise a new one is made. */
export function acceptRequestId(value: string | undefined | null): string | undefined {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined;
}
