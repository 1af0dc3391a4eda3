// GET /healthz: the process is up, and its version (and git commit where
// known). GET /readyz: the services the gateway needs answer their own
// /readyz; 503 names which do not. The body reports every service.
import type { FastifyInstance } from "fastify";
import { HttpError, sendError } from "../errors.js";
import { DEFAULT_ERROR, HEADERS, error, json } from "../schemas/common.js";
import { readBuildInfo } from "../build-info.js";
import { Health, Readiness } from "../schemas/organisation.js";

const noStore = { "cache-control": HEADERS.noStore };
const HEALTHZ = {
  operationId: "getHealth",
  summary: "Liveness: the gateway process is up",
  tags: ["Health"],
  security: [],
  response: {
    200: json(
      "Up",
      Health,
      { status: "ok", version: "0.1.0", commit: "a25ffb2c0e1d4f7b9a8c6e5d4c3b2a1f0e9d8c7b" },
      noStore,
    ),
    400: DEFAULT_ERROR,
    default: DEFAULT_ERROR,
  },
};
const READYZ = {
  operationId: "getReadiness",
  summary: "Readiness: the services the gateway needs answer",
  tags: ["Health"],
  security: [],
  response: {
    200: json(
      "Ready; every service reported",
      Readiness,
      { status: "ok", services: { organisation: "ok", auth: "ok", webhook: "ok", delivery: "ok" } },
      noStore,
    ),
    400: DEFAULT_ERROR,
    503: error("A required service does not answer", "temporarily_unavailable", "not ready: auth", {
      ...noStore,
      "retry-after": HEADERS.retryAfter,
    }),
    default: DEFAULT_ERROR,
  },
};

// Reported, not required: only the delivery log routes need it (they answer 503 on their own);
// requiring it would take the working OAuth endpoints out of a load balancer's rotation.
const OPTIONAL = new Set(["delivery"]);

async function ready(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** `services`: service name -> base URL of its RPC port (which serves /readyz). */
export function healthRoutes(app: FastifyInstance, services: Record<string, string>): void {
  const build = readBuildInfo();
  app.get("/healthz", { schema: HEALTHZ }, async (_req, reply) =>
    reply.header("cache-control", "no-store").send({ status: "ok", ...build }),
  );

  app.get("/readyz", { schema: READYZ }, async (_req, reply) => {
    const names = Object.keys(services);
    const results = await Promise.all(names.map((n) => ready(services[n]!, 2000)));
    const down = names.filter((n, i) => !results[i] && !OPTIONAL.has(n));
    reply.header("cache-control", "no-store");
    if (down.length > 0) {
      return sendError(
        reply,
        new HttpError(503, "temporarily_unavailable", `not ready: ${down.join(", ")}`, { "retry-after": "5" }),
      );
    }
    return reply.send({
      status: "ok",
      services: Object.fromEntries(names.map((n, i) => [n, results[i] ? "ok" : "unavailable"])),
    });
  });
}
