// A local webhook receiver that counts the requests open at once, per path:
// each path holds its requests for `holdMs` before answering 200, or forever
// ("hang": the sender's timeout ends them). A request stops counting when its
// answer is sent or its connection closes.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface CountedRoute {
  url: string;
  /** When each request arrived (ms since the epoch), in order. */
  arrivals: number[];
  /** The bodies received, in order. */
  bodies: string[];
  open: number;
  /** The most requests this path had open at once. */
  maxOpen: number;
}

export interface CountingReceiver {
  route(path: string, hold: number | "hang"): CountedRoute;
  close(): Promise<void>;
}

export async function startCountingReceiver(): Promise<CountingReceiver> {
  const routes = new Map<string, { hold: number | "hang"; counted: CountedRoute }>();
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const route = routes.get(req.url ?? "");
    if (!route) return void res.writeHead(404).end();
    const { counted, hold } = route;
    counted.arrivals.push(Date.now());
    counted.open++;
    counted.maxOpen = Math.max(counted.maxOpen, counted.open);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      counted.open--;
    };
    res.on("close", finish);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      counted.bodies.push(Buffer.concat(chunks).toString("utf8"));
      if (hold === "hang") return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        finish();
        res.writeHead(200).end("thanks");
      }, hold);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    route(path, hold) {
      const counted: CountedRoute = { url: `${base}${path}`, arrivals: [], bodies: [], open: 0, maxOpen: 0 };
      routes.set(path, { hold, counted });
      return counted;
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
