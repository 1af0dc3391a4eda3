// Decides once per run which backends the suites use, and says so.
import net from "node:net";
import { ADMIN_DATABASE_URL, TEST_NATS_URL } from "./support/backends.js";

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort), timeout: 1500 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export default async function setup(): Promise<void> {
  const postgres = await reachable(ADMIN_DATABASE_URL, 5432);
  const nats = await reachable(TEST_NATS_URL, 4222);
  process.env.BIZCARD_TEST_POSTGRES = postgres ? "real" : "embedded";
  process.env.BIZCARD_TEST_NATS = nats ? "real" : "embedded";
  const say = (what: string, real: boolean, where: string, fallback: string) =>
    real ? `${what}: real (${where})` : `${what}: NOT REACHABLE at ${where}; using the embedded ${fallback}`;
  process.stdout.write(
    `\n[backends] ${say("PostgreSQL", postgres, new URL(ADMIN_DATABASE_URL).host, "PGlite")}; ${say("NATS", nats, new URL(TEST_NATS_URL).host, "in-process bus")}\n\n`,
  );
}
