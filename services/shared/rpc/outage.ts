// Which failures are an outage of a backend (the database, the bus) rather
// than a fault of this server: the one classification the RPC servers use to
// answer them Unavailable (the transient code: a caller may retry), whichever
// path met them (MikroORM, pg directly, NATS).
import { ConnectionException } from "@mikro-orm/core";

/** Node's network errors of a peer that is away or unreachable. */
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
 * PostgreSQL SQLSTATEs of a server that is going or gone
 * (https://www.postgresql.org/docs/current/errcodes-appendix.html):
 * class 08 connection exception; 57P01 admin_shutdown, 57P02 crash_shutdown,
 * 57P03 cannot_connect_now; 53300 too_many_connections.
 */
const SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

/** nats.js error codes of a connection that is not there. */
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
