// A request's logger, made when a line is written. Fastify makes a child
// logger for every request (childLoggerFactory), and the gateway's carries
// the request's trace id: pino serialises a child's bindings at once, and
// the trace id means a trace made for the request (random ids, a span) even
// when tracing is off and nothing is logged. At a level that writes no line
// per request (LOG_LEVEL=warn), that was a large part of a cached GET
// /oauth/me's work. So the child is made on the first call of a method that
// would write, or of child() (or on any other use), and a method whose level
// is off answers as pino would: nothing.
import type { FastifyBaseLogger } from "fastify";

const LEVELS = new Set(["fatal", "error", "warn", "info", "debug", "trace"]);
const nothing = () => undefined;

export function lazyRequestLogger(parent: FastifyBaseLogger & { isLevelEnabled(level: string): boolean }, make: () => FastifyBaseLogger): FastifyBaseLogger {
  let child: FastifyBaseLogger | undefined;
  const real = () => (child ??= make()) as unknown as Record<string | symbol, unknown>;
  return new Proxy({} as FastifyBaseLogger, {
    get(_, prop) {
      // A method (Fastify checks that each exists, for every request): the child is made when it is called.
      if (child === undefined && typeof prop === "string" && (LEVELS.has(prop) || prop === "child")) {
        if (LEVELS.has(prop) && !parent.isLevelEnabled(prop)) return nothing;
        return (...args: unknown[]) => (real()[prop] as (...a: unknown[]) => unknown).apply(real(), args);
      }
      const target = real();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_, prop, value) {
      return Reflect.set(real(), prop, value);
    },
    has(_, prop) {
      return Reflect.has(real(), prop);
    },
  });
}
