// A local webhook receiver: the target the delivery tests subscribe. Each path
// answers as its test says (a status per request number, or never: "hang"),
// and keeps what arrived.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | "hang";

export interface Receiver {
  base: string;
  /** Registers a path; `answer(n)` decides the n-th (1-based) request's answer (200 by default). */
  route(path: string, answer?: (n: number) => Answer): { url: string; requests: Received[] };
  all(): Received[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const routes = new Map<string, { answer: (n: number) => Answer; requests: Received[] }>();
  const all: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const received: Received = {
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      all.push(received);
      const route = routes.get(req.url ?? "");
      if (!route) return void res.writeHead(404).end();
      route.requests.push(received);
      const answer = route.answer(route.requests.length);
      if (answer === "hang") return; // never answers: the sender's timeout ends it
      const send = () => res.writeHead(answer.status, answer.headers).end("thanks");
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    route(path, answer = () => ({ status: 200 })) {
      const entry = { answer, requests: [] as Received[] };
      routes.set(path, entry);
      return { url: `${base}${path}`, requests: entry.requests };
    },
    all: () => all,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
