// A second `npm start` beside a running platform: its ports are taken, and
// what holds the gateway's port answers as this platform's gateway. The
// person then hears that the platform is already running, and where, rather
// than which port is in use.
import { PortInUseError } from "../services/shared/port-in-use.js";

/** The gateway's /healthz answer, when a bizcard gateway answers at `url` within a second. */
async function healthOf(url: string): Promise<{ version?: string } | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { status?: string; version?: string };
    return res.ok && body.status === "ok" ? body : undefined;
  } catch {
    return undefined;
  }
}

/**
 * For a start that found a port in use: the line to print when the platform
 * already runs here (its gateway answers on GATEWAY_PORT), else undefined.
 */
export async function alreadyRunning(
  err: unknown,
  gateway: { host: string; port: number },
): Promise<string | undefined> {
  if (!(err instanceof PortInUseError)) return undefined;
  const url = `http://${gateway.host}:${gateway.port}`;
  const health = await healthOf(url);
  if (!health) return undefined;
  return (
    `bizcard: the platform is already running: its gateway answers at ${url}` +
    `${health.version ? ` (version ${health.version})` : ""}. Stop it first (Ctrl-C where it runs), ` +
    "or give this start other ports (GATEWAY_PORT, GATEWAY_METRICS_PORT and the *_RPC_PORT variables)"
  );
}
