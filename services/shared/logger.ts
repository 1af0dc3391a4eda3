// Structured logs (pino): one line per request, each with the request id and
// the trace id of the work it describes; JSON, or readable lines on a
// terminal (LOG_FORMAT).
import { createRequire } from "node:module";
import { DriverException } from "@mikro-orm/core";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";
import { currentTraceId } from "./request-context.js";

export type { Logger };
type LogFormat = "json" | "pretty";

const NO_FIELDS = Object.freeze({});

/** A line written while a request (or a delivery) is served carries its trace id, in every process. */
function traceFields(): object {
  const traceId = currentTraceId();
  return traceId === undefined ? NO_FIELDS : { traceId };
}

/** LOG_FORMAT when set (json | pretty); otherwise readable lines on a terminal, JSON for anything that reads them. */
export function logFormat(
  env: string | undefined = process.env.LOG_FORMAT,
  isTTY: boolean = process.stdout.isTTY === true,
): LogFormat {
  return env === "json" || env === "pretty" ? env : isTTY ? "pretty" : "json";
}

type PrettyFactory = (options: Record<string, unknown>) => DestinationStream;

/** pino-pretty is a development dependency, absent from the production image: undefined there. */
function loadPretty(): PrettyFactory | undefined {
  try {
    const mod = createRequire(import.meta.url)("pino-pretty") as PrettyFactory | { default: PrettyFactory };
    return typeof mod === "function" ? mod : mod.default;
  } catch {
    return undefined;
  }
}

/** `destination`: stdout by default (tests pass a stream); `format`: then logFormat(), JSON for a given destination. */
export function createLogger(
  name: string,
  level: string = process.env.LOG_LEVEL ?? "info",
  destination?: DestinationStream,
  format: LogFormat = destination ? "json" : logFormat(),
): Logger {
  const options: LoggerOptions = {
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: safeError },
    mixin: traceFields,
    // pino's default merge writes the line's fields into the mixin's object: not into the shared empty one.
    mixinMergeStrategy: (fields: object, mixed: object) =>
      mixed === NO_FIELDS ? fields : Object.assign(mixed, fields),
    redact: {
      paths: ["password", "*.password", "client_secret", "*.client_secret", "authorization", "*.authorization"],
      censor: "[redacted]",
    },
  };
  const pretty = format === "pretty" ? loadPretty() : undefined;
  if (pretty) {
    const stream = pretty({
      destination: destination ?? 1,
      colorize: destination ? false : undefined,
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname,service",
      messageFormat: "{service}: {msg}",
      singleLine: true,
      sync: true,
    });
    return pino(options, stream);
  }
  const logger = destination ? pino(options, destination) : pino(options);
  if (format === "pretty") {
    logger.warn("LOG_FORMAT=pretty needs pino-pretty, which is not installed (a development dependency): writing JSON");
  }
  return logger;
}

/** Causes followed at most (a cycle or a very long chain ends there). */
const MAX_DEPTH = 5;

/**
 * Errors as logs show them, causes included. A database error's message holds
 * the statement's values (MikroORM inlines them): it is written without them, and without stack.
 */
export function safeError(err: unknown, depth = 0): unknown {
  if (err instanceof DriverException) return driverError(err);
  if (isPgError(err))
    return {
      type: "DatabaseError",
      code: err.code,
      table: err.table,
      constraint: err.constraint,
      message: withoutValues(err.message),
    };
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = {
    type: err.constructor?.name ?? err.name,
    message: err.message,
    stack: err.stack,
  };
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
  return (
    err instanceof Error &&
    typeof (err as { code?: unknown }).code === "string" &&
    "severity" in err &&
    "routine" in err
  );
}

/** SQL string literals ('…', E'…', with '' inside) and numbers replaced by `?`. */
function withoutLiterals(sql: string): string {
  return sql.replace(/(?:\b[Ee])?'(?:[^']|'')*'/g, "?").replace(/(?<![\w."$])-?\d+(?:\.\d+)?(?![\w"])/g, "?");
}

/** PostgreSQL quotes the offending value after a colon: `invalid input syntax for type uuid: "…"`. */
function withoutValues(message: string): string {
  return message.replace(/: "(?:[^"]|"")*"/g, ': "?"').replace(/: 0x[0-9a-f]+( 0x[0-9a-f]+)*/gi, ": ?");
}
