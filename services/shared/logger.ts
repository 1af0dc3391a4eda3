// Structured JSON logs (pino): one line per request, each with the request id.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    name,
    level,
    base: { service: name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ["password", "*.password", "client_secret", "*.client_secret", "authorization", "*.authorization"],
      censor: "[redacted]",
    },
  });
}
