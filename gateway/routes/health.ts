// GET /healthz: the process is up. GET /readyz: the services the gateway
// needs to serve (and through them their databases and the bus) answer their
// own /readyz; 503 names which do not. The body reports every service.
import type { FastifyInstance } from "fastify";
import { HttpError, sendError } from "../errors.js";

export interface HealthRouteOptions {
  /** Service name -> base URL of its RPC port (which serves /readyz). */
  services: Record<string, string>;
  /**
   * Services reported but not required: the gateway serves its OAuth and REST
   * routes without them. Default: the delivery service, which only the
   * delivery log routes use (those answer 503 on their own while it is down);
   * a readiness that required it would take the OAuth endpoints out of a load
   * balancer's rotation while they work.
   */
  optional?: readonly string[];
  timeoutMs?: number;
}

const OPTIONAL = ["delivery"];

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
  const optional = new Set(options.optional ?? OPTIONAL);
  app.get("/healthz", async (_req, reply) => reply.header("cache-control", "no-store").send({ status: "ok" }));

  app.get("/readyz", async (_req, reply) => {
    const names = Object.keys(options.services);
    const results = await Promise.all(names.map((n) => ready(options.services[n]!, options.timeoutMs ?? 2000)));
    const down = names.filter((n, i) => !results[i] && !optional.has(n));
    reply.header("cache-control", "no-store");
    if (down.length > 0) {
      return sendError(reply, new HttpError(503, "temporarily_unavailable", `not ready: ${down.join(", ")}`, { "retry-after": "5" }));
    }
    return reply.send({ status: "ok", services: Object.fromEntries(names.map((n, i) => [n, results[i] ? "ok" : "unavailable"])) });
  });
}
