// Structured JSON logs (pino): one line per request, each with the request id.
import { DriverException } from "@mikro-orm/core";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";

export type { Logger };

/** `destination`: where the lines go (default stdout); tests pass a stream to read them. */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? "info", destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: safeError },
    redact: {
      paths: ["password", "*.password", "client_secret", "*.client_secret", "authorization", "*.authorization"],
      censor: "[redacted]",
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Causes followed at most (a cycle or a very long chain ends there). */
const MAX_DEPTH = 5;

/**
 * Errors as logs may show them: the one place where an error's cause chain
 * is written out. A database error is the danger: MikroORM inlines the
 * parameters into the statement it sends, and knex prefixes the driver's
 * message with that statement, so the message holds the values (password
 * hashes, interaction ids, CSRF tokens). A database error is written as its
 * kind, SQLSTATE, table and constraint, the statement with every literal
 * replaced by `?`, and the server's message with the values it quotes
 * replaced (no stack); every other error as type, message, code and stack, with its
 * causes treated the same way.
 */
export function safeError(err: unknown, depth = 0): unknown {
  if (err instanceof DriverException) return driverError(err);
  if (isPgError(err)) return { type: "DatabaseError", code: err.code, table: err.table, constraint: err.constraint, message: withoutValues(err.message) };
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = { type: err.constructor?.name ?? err.name, message: err.message, stack: err.stack };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (depth < MAX_DEPTH) {
    if (err.cause !== undefined) out.cause = safeError(err.cause, depth + 1);
    if (err instanceof AggregateError) out.errors = err.errors.map((e) => safeError(e, depth + 1));
  }
  return out;
}

function driverError(err: DriverException): Record<string, unknown> {
  const e = err as DriverException & { constraint?: string; table?: string };
  // knex: "<statement> - <the server's message>".
  const cut = e.message.lastIndexOf(" - ");
  const statement = cut >= 0 ? withoutLiterals(e.message.slice(0, cut)) : undefined;
  const message = cut >= 0 ? e.message.slice(cut + 3) : e.message;
  return {
    type: e.name,
    code: e.code,
    table: e.table,
    constraint: e.constraint,
    statement,
    // No stack: its first line repeats the message, statement and values included.
    message: withoutValues(message.split("\n")[0]!),
  };
}

/** pg's own DatabaseError (a statement sent with pg directly, not through MikroORM). */
function isPgError(err: unknown): err is Error & { code: string; table?: string; constraint?: string } {
  return err instanceof Error && typeof (err as { code?: unknown }).code === "string" && "severity" in err && "routine" in err;
}

/** SQL string literals ('…', E'…', with '' inside) and numbers replaced by `?`. */
export function withoutLiterals(sql: string): string {
  return sql.replace(/(?:\b[Ee])?'(?:[^']|'')*'/g, "?").replace(/(?<![\w."$])-?\d+(?:\.\d+)?(?![\w"])/g, "?");
}

/** PostgreSQL quotes the offending value after a colon: `invalid input syntax for type uuid: "…"`. */
function withoutValues(message: string): string {
  return message.replace(/: "(?:[^"]|"")*"/g, ': "?"').replace(/: 0x[0-9a-f]+( 0x[0-9a-f]+)*/gi, ": ?");
}
