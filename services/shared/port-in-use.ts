// A port another process holds is a plain operator mistake: one line naming
// the port and its variable, exit 1, no stack trace.
import net from "node:net";

export interface PortSetting {
  /** The environment variable that sets it, e.g. GATEWAY_PORT. */
  variable: string;
  host: string;
  port: number;
}

export class PortInUseError extends Error {
  constructor(readonly setting: PortSetting) {
    super(`port ${setting.port} (${setting.variable}) is already in use`);
    this.name = "PortInUseError";
  }
}

/** Runs listen(); an address in use becomes a PortInUseError naming the variable. */
export async function listenOn<T>(setting: PortSetting, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (err) {
    throw (err as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE" ? new PortInUseError(setting) : err;
  }
}

/** Fails fast when a port is taken; the real listen() can still lose a race: wrap it in listenOn. */
export async function checkPortsFree(settings: PortSetting[]): Promise<void> {
  for (const setting of settings) {
    if (setting.port === 0) continue;
    await listenOn(
      setting,
      () =>
        new Promise<void>((resolve, reject) => {
          const probe = net.createServer();
          probe.once("error", reject);
          probe.listen(setting.port, setting.host, () => probe.close(() => resolve()));
        }),
    );
  }
}

/** For a process's start: a PortInUseError is one line on stderr and exit 1; anything else is rethrown. */
export function exitIfPortInUse(processName: string, err: unknown): void {
  if (err instanceof PortInUseError) {
    process.stderr.write(`${processName}: ${err.message}\n`);
    process.exit(1);
  }
}
