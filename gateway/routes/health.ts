// GET /healthz: the process is up. GET /readyz: every service (and through
// them every database and the bus) answers its own /readyz; 503 names which
// do not.
import type { FastifyInstance } from "fastify";
import { HttpError, sendError } from "../errors.js";

export interface HealthRouteOptions {
  /** Service name -> base URL of its RPC port (which serves /readyz). */
  services: Record<string, string>;
  timeoutMs?: number;
}

async function ready(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export function healthRoutes(app: FastifyInstance, options: HealthRouteOptions): void {
  app.get("/healthz", async (_req, reply) => reply.header("cache-control", "no-store").send({ status: "ok" }));

  app.get("/readyz", async (_req, reply) => {
    const names = Object.keys(options.services);
    const results = await Promise.all(names.map((n) => ready(options.services[n]!, options.timeoutMs ?? 2000)));
    const down = names.filter((_, i) => !results[i]);
    reply.header("cache-control", "no-store");
    if (down.length > 0) {
      return sendError(reply, new HttpError(503, "temporarily_unavailable", `not ready: ${down.join(", ")}`, { "retry-after": "5" }));
    }
    return reply.send({ status: "ok", services: Object.fromEntries(names.map((n) => [n, "ok"])) });
  });
}
