// A second `npm start` beside a running platform: its ports are taken, and what holds the gateway's
// port answers as this platform's gateway. The person then hears that the platform is already running,
// and where, rather than which port is in use.
import { PortInUseError } from "../services/shared/port-in-use.js";

/**
 * For a start that found a port in use: the line to print when the platform already runs here (a
 * bizcard gateway's /healthz answers on GATEWAY_PORT within a second), else undefined.
 */
export async function alreadyRunning(
  err: unknown,
  gateway: { host: string; port: number },
): Promise<string | undefined> {
  if (!(err instanceof PortInUseError)) return undefined;
  const url = `http://${gateway.host}:${gateway.port}`;
  const health = (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
    .then((res) => (res.ok ? res.json() : undefined))
    .catch(() => undefined)) as { status?: string; version?: string } | undefined;
  if (health?.status !== "ok") return undefined;
  return (
    `bizcard: the platform is already running: its gateway answers at ${url}` +
    `${health.version ? ` (version ${health.version})` : ""}. Stop it first (Ctrl-C where it runs), ` +
    "or give this start other ports (GATEWAY_PORT, GATEWAY_METRICS_PORT and the *_RPC_PORT variables)"
  );
}
