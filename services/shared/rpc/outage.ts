// Which failures are an outage of a backend (the database, the bus) rather
// than a fault of this server, answered Unavailable (a caller may retry),
// whichever path met them (MikroORM, pg directly, NATS).
import { ConnectionException } from "@mikro-orm/core";

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/**
 * PostgreSQL SQLSTATEs of a server going or gone: admin_shutdown,
 * crash_shutdown, cannot_connect_now, too_many_connections (and class 08).
 */
const SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

const NATS_CODES = new Set(["CONNECTION_CLOSED", "CONNECTION_DRAINING", "CONNECTION_REFUSED", "DISCONNECT", "503"]);

/** Messages of failures that carry no code: pg's lost connection, knex's pool that found none. */
const MESSAGES = [
  /^Connection terminated/,
  /Timeout acquiring a connection/,
  /^Client has encountered a connection error/,
  /not connected/i,
];

/** True when `err` (or an error in its cause chain) says a backend is unreachable. */
export function isOutage(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof ConnectionException) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      if (NETWORK_CODES.has(code) || NATS_CODES.has(code) || SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))
        return true;
    }
    if (e.name === "KnexTimeoutError" || MESSAGES.some((m) => m.test(e.message))) return true;
  }
  return false;
}
