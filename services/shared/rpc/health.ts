// GET /healthz (the process is up), GET /readyz (every backend it needs
// answers) and GET /metrics beside a service's RPC routes.
import { serveMetrics } from "../metrics/metrics-listener.js";
import type { ServerRequest, ServerResponse } from "./listener.js";

export type ReadinessCheck = () => Promise<Record<string, string>>;

export async function healthRoutes(req: ServerRequest, res: ServerResponse, readiness?: ReadinessCheck): Promise<void> {
  const send = (status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const path = (req.url ?? "").split("?")[0];
  if (serveMetrics(req, res)) return;
  if (req.method === "GET" && path === "/healthz") return send(200, { status: "ok" });
  if (req.method === "GET" && path === "/readyz") {
    try {
      const checks = readiness ? await readiness() : {};
      return send(200, { status: "ok", checks });
    } catch (err) {
      return send(503, { status: "unavailable", error: err instanceof Error ? err.message : String(err) });
    }
  }
  send(404, { error: "not_found", error_description: "no such route" });
}

/** A check that has not answered by then counts as failed (a caller's /readyz must not hang). */
const CHECK_TIMEOUT_MS = 1500;

/** Runs every check: a failed `required` one makes the service unready; an `informational` one is only reported. */
export async function runChecks(
  required: Record<string, () => Promise<unknown>>,
  informational: Record<string, () => Promise<unknown>> = {},
): Promise<Record<string, string>> {
  const all = { ...required, ...informational };
  const names = Object.keys(all);
  const withTimeout = (check: () => Promise<unknown>) =>
    Promise.race([
      check(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("check timed out")), CHECK_TIMEOUT_MS).unref()),
    ]);
  const results = await Promise.allSettled(names.map((n) => withTimeout(all[n]!)));
  const failed = names.filter((n, i) => results[i]!.status === "rejected" && n in required);
  if (failed.length > 0) throw new Error(`unavailable: ${failed.join(", ")}`);
  return Object.fromEntries(names.map((n, i) => [n, results[i]!.status === "fulfilled" ? "ok" : "unavailable"]));
}
