// GET /metrics (no credential, as any Prometheus target on an internal port):
// on the gateway's own listener (GATEWAY_METRICS_PORT, never its public
// port), and beside /healthz on the RPC servers (rpc/health.ts).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ServerRequest, ServerResponse } from "../rpc/listener.js";
import { scrape } from "./metrics.js";

/** Answers GET /metrics; false when the request is for something else. */
export function serveMetrics(req: ServerRequest, res: ServerResponse): boolean {
  if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") return false;
  scrape().then(
    ({ contentType, body }) => {
      res.writeHead(200, { "content-type": contentType });
      res.end(body);
    },
    (err: unknown) => {
      res.writeHead(500, { "content-type": "text/plain" });
      res.end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
    },
  );
  return true;
}

export interface MetricsListener {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsListener(host: string, port: number): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    if (serveMetrics(req, res)) return;
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found\n");
  });
  // Scrapers keep connections open; they must not hold a shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
