// Structured JSON logs (pino): one line per request, each with the request id.
import { DriverException } from "@mikro-orm/core";
import { pino, stdSerializers, type DestinationStream, type Logger, type LoggerOptions } from "pino";

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

/**
 * Errors as logs may show them. A database error's message carries the whole
 * statement with its parameters (password hashes, secrets' hashes): only its
 * kind, SQLSTATE and the server's own message are kept.
 */
export function safeError(err: unknown): unknown {
  if (err instanceof DriverException) {
    const e = err as DriverException & { constraint?: string; table?: string; schema?: string };
    // knex prefixes the driver's message with the statement: keep what follows it.
    const message = e.message.includes(" - ") ? e.message.slice(e.message.lastIndexOf(" - ") + 3) : e.message;
    return { type: e.name, code: e.code, table: e.table, constraint: e.constraint, message: message.split("\n")[0] };
  }
  return err instanceof Error ? stdSerializers.err(err) : err;
}
