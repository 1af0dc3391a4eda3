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

/** page_size: 0 means the default; otherwise 1..max. */
export function pageSize(value: number, fallback = 50, max = 100): number {
  if (value === 0) return fallback;
  if (!Number.isInteger(value) || value < 1 || value > max) throw invalid("page_size", `expected 1 to ${max}`);
  return value;
}

/** Opaque keyset cursors: base64url of a JSON array. */
export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

export function decodeCursor(token: string, arity: number): (string | number)[] | undefined {
  if (!token) return undefined;
  try {
    const parts = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (Array.isArray(parts) && parts.length === arity) return parts;
  } catch {
    // fall through
  }
  throw invalid("page_token", "not a token this service issued");
}

export function notFound(what: string): ConnectError {
  return new ConnectError(`${what} not found`, Code.NotFound);
}

/** A (time, uuid) keyset cursor, checked: anything this service did not issue is INVALID_ARGUMENT. */
export function decodeTimeIdCursor(token: string): [Date, string] | undefined {
  const parts = decodeCursor(token, 2);
  if (!parts) return undefined;
  const [time, id] = parts;
  const date = typeof time === "string" ? new Date(time) : new Date(NaN);
  if (Number.isNaN(date.getTime()) || typeof id !== "string" || !UUID.test(id)) {
    throw invalid("page_token", "not a token this service issued");
  }
  return [date, id];
}

export function encodeTimeIdCursor(time: Date, id: string): string {
  return encodeCursor([time.toISOString(), id]);
}
