// Small checks every service uses on RPC input; failures are INVALID_ARGUMENT
// naming the field.
import { Code, ConnectError } from "@connectrpc/connect";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function invalid(field: string, why: string): ConnectError {
  return new ConnectError(`${field}: ${why}`, Code.InvalidArgument);
}

export function requireUuid(field: string, value: string): string {
  if (!value) throw invalid(field, "required");
  if (!UUID.test(value)) throw invalid(field, "expected a UUID");
  return value.toLowerCase();
}

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}
