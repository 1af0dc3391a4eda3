// Structured logs (pino): one line per request, each with the request id and
// the trace id of the work it describes; JSON, or readable lines on a
// terminal (LOG_FORMAT).
import { createRequire } from "node:module";
import { DriverException } from "@mikro-orm/core";
import { pino, type DestinationStream, type Logger, type LoggerOptions } from "pino";
import { currentTraceId } from "./request-context.js";

export type { Logger };

export type LogFormat = "json" | "pretty";

const NO_FIELDS = Object.freeze({});

/**
 * Every line written while a request (or a delivery) is being served carries
 * its trace id, so a trace's lines are found in every process it went through.
 */
function traceFields(): object {
  const traceId = currentTraceId();
  return traceId === undefined ? NO_FIELDS : { traceId };
}

/** LOG_FORMAT when set (json | pretty); otherwise readable lines on a terminal, JSON for anything that reads them. */
export function logFormat(
  env: string | undefined = process.env.LOG_FORMAT,
  isTTY: boolean = process.stdout.isTTY === true,
): LogFormat {
  if (env === "json" || env === "pretty") return env;
  return isTTY ? "pretty" : "json";
}

type PrettyFactory = (options: Record<string, unknown>) => DestinationStream;
let prettyFactory: PrettyFactory | null | undefined;

/**
 * pino-pretty is a development dependency: the production image (no terminal)
 * writes JSON and does not install it. Asked for where it is missing, the
 * lines stay JSON, with one warning saying why.
 */
function loadPretty(): PrettyFactory | null {
  if (prettyFactory !== undefined) return prettyFactory;
  try {
    const mod = createRequire(import.meta.url)("pino-pretty") as PrettyFactory | { default: PrettyFactory };
    prettyFactory = typeof mod === "function" ? mod : mod.default;
  } catch {
    prettyFactory = null;
  }
  return prettyFactory;
}

/**
 * `destination`: where the lines go (default stdout); tests pass a stream to read them.
 * `format`: json or pretty; by default logFormat() (LOG_FORMAT, or whether stdout is a terminal)
 * for stdout, JSON for a given destination (what reads it parses it).
 */
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
  if (format === "pretty") {
    const pretty = loadPretty();
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
    logger.warn("LOG_FORMAT=pretty needs pino-pretty, which is not installed (a development dependency): writing JSON");
    return logger;
  }
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
export function withoutLiterals(sql: string): string {
  return sql.replace(/(?:\b[Ee])?'(?:[^']|'')*'/g, "?").replace(/(?<![\w."$])-?\d+(?:\.\d+)?(?![\w"])/g, "?");
}

/** PostgreSQL quotes the offending value after a colon: `invalid input syntax for type uuid: "…"`. */
function withoutValues(message: string): string {
  return message.replace(/: "(?:[^"]|"")*"/g, ': "?"').replace(/: 0x[0-9a-f]+( 0x[0-9a-f]+)*/gi, ": ?");
}
