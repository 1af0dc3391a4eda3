// The request id travels with a request across RPC calls: the gateway (or the
// first RPC server) assigns it, interceptors copy it into the next call.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

export const REQUEST_ID_HEADER = "x-request-id";

interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithRequestId<T>(requestId: string | undefined | null, fn: () => T): T {
  return storage.run({ requestId: acceptRequestId(requestId) ?? randomUUID() }, fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** An incoming id is kept only when it is short and printable; otherwise a new one is made. */
export function acceptRequestId(value: string | undefined | null): string | undefined {
  return value && /^[A-Za-z0-9._:-]{1,128}$/.test(value) ? value : undefined;
}
