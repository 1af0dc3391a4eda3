// A request's logger, made when a line is written. Fastify makes a child
// logger for every request (childLoggerFactory), and the gateway's carries
// the request's trace id: pino serialises a child's bindings at once, and
// the trace id means a trace made for the request (random ids, a span) even
// when tracing is off and nothing is logged. At a level that writes no line
// per request (LOG_LEVEL=warn), that was a large part of a cached GET
// /oauth/me's work. So the child is made on the first line written at a
// level that is on, or on child(); a line at a level that is off is nothing,
// as in pino. A class, not a Proxy: Fastify reads each of its methods twice
// per request (validateLogger), which a Proxy answered with a trap and a new
// function each time.
import type { FastifyBaseLogger } from "fastify";

type Parent = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };
type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

class LazyRequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Parent,
    private readonly make: () => FastifyBaseLogger,
  ) {}

  private real(): FastifyBaseLogger {
    return (this.made ??= this.make());
  }

  /** Writes through the child, made now, when `level` is on (the child's level once made: it may have been changed). */
  private write(level: Level, args: unknown[]): void {
    const enabled = this.made ? (this.made as Parent).isLevelEnabled(level) : this.parent.isLevelEnabled(level);
    if (enabled) (this.real()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): FastifyBaseLogger["level"] {
    return (this.made ?? this.parent).level;
  }

  set level(level: FastifyBaseLogger["level"]) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.write("error", args);
  }
  warn(...args: unknown[]): void {
    this.write("warn", args);
  }
  info(...args: unknown[]): void {
    this.write("info", args);
  }
  debug(...args: unknown[]): void {
    this.write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(...args: Parameters<FastifyBaseLogger["child"]>): FastifyBaseLogger {
    return this.real().child(...args);
  }
}

export function lazyRequestLogger(parent: Parent, make: () => FastifyBaseLogger): FastifyBaseLogger {
  return new LazyRequestLogger(parent, make);
}
