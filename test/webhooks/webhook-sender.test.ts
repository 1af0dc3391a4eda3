// One POST as the delivery workers send it (services/delivery/sender), against
// loopback receivers: what the receiver gets (method, headers, the body as
// stored, a signature the standardwebhooks library verifies), and what the
// attempt reports for each kind of answer: a 2xx, a non-2xx with its
// Retry-After, a 3xx (not followed), an answer whose body runs on past the
// cap, a receiver that sends its head and then never ends the body (the one
// timeout bounds the whole attempt), one that never answers, and a refused
// connection.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookSender, type WebhookSender } from "../../services/delivery/sender/webhook-sender.js";

const SECRET = `whsec_${Buffer.from("k".repeat(32)).toString("base64")}`;
const TIMEOUT_MS = 400;
const received: { url: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
let server: http.Server;
let base: string;
let sender: WebhookSender;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      switch (req.url!.split("?")[0]) {
        case "/ok":
          return res.writeHead(204).end();
        case "/busy":
          return res.writeHead(429, { "retry-after": "7" }).end("slow down");
        case "/moved":
          return res.writeHead(301, { location: `${base}/ok` }).end();
        case "/large": {
          // 1 MB in 64 KB chunks, the connection kept open between them.
          res.writeHead(200, { "content-type": "application/octet-stream" });
          let sent = 0;
          const more = () => {
            if (res.destroyed) return;
            if (sent++ < 16) res.write(Buffer.alloc(64 * 1024, 1), () => setTimeout(more, 5));
            else res.end();
          };
          return more();
        }
        case "/head-only":
          // The head, then a body that never ends.
          res.writeHead(200, { "content-type": "text/plain" });
          return res.write("partial");
        case "/silent":
          return; // never answers
        default:
          return res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  sender = createWebhookSender({ resolve: async () => ["127.0.0.1"], allowInsecure: true, timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  await sender.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const webhook = (path: string) => ({
  url: `${base}${path}?tenant=a`,
  secret: SECRET,
  eventId: "01939a1e-0c3a-7d6b-8f00-1234567890ab",
  body: JSON.stringify({ type: "contact.created", data: { id: "c1" } }),
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  tracestate: "vendor=x",
});

describe("webhook sender", () => {
  it("POSTs the body as stored with the Standard Webhooks headers, and reports a 2xx as delivered", async () => {
    const result = await sender.send(webhook("/ok"));
    expect(result).toMatchObject({ ok: true, status: 204 });
    const got = received.find((r) => r.url === "/ok?tenant=a")!;
    expect(got.body).toBe(webhook("/ok").body);
    expect(got.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": "bizcard-webhooks/1",
      "webhook-id": webhook("/ok").eventId,
      traceparent: webhook("/ok").traceparent,
      tracestate: "vendor=x",
    });
    const verified = new Webhook(SECRET).verify(got.body, {
      "webhook-id": got.headers["webhook-id"] as string,
      "webhook-timestamp": got.headers["webhook-timestamp"] as string,
      "webhook-signature": got.headers["webhook-signature"] as string,
    });
    expect(verified).toEqual(JSON.parse(got.body));
  });

  it("reports a non-2xx with its status and Retry-After", async () => {
    expect(await sender.send(webhook("/busy"))).toMatchObject({
      ok: false,
      status: 429,
      kind: "http",
      error: "HTTP 429",
      retryAfterMs: 7000,
    });
  });

  it("does not follow a redirect: a 3xx is an answer like any other non-2xx", async () => {
    const before = received.filter((r) => r.url.startsWith("/ok")).length;
    expect(await sender.send(webhook("/moved"))).toMatchObject({ ok: false, status: 301, kind: "http" });
    expect(received.filter((r) => r.url.startsWith("/ok")).length).toBe(before);
  });

  it("reads at most 64 KB of an answer: a 2xx whose body runs on is delivered without waiting for the rest", async () => {
    const result = await sender.send(webhook("/large"));
    expect(result).toMatchObject({ ok: true, status: 200 });
    // 16 chunks 5 ms apart would take at least 80 ms; the cap is past after the second.
    expect(result.durationMs).toBeLessThan(TIMEOUT_MS);
  });

  it("bounds the whole attempt with the one timeout, also when the head came and the body never ends", async () => {
    const result = await sender.send(webhook("/head-only"));
    expect(result).toMatchObject({
      ok: false,
      status: 0,
      kind: "timeout",
      error: `timeout: no complete answer within ${TIMEOUT_MS} ms`,
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(result.durationMs).toBeLessThan(TIMEOUT_MS + 300);
  });

  it("reports a receiver that never answers as a timeout", async () => {
    const result = await sender.send(webhook("/silent"));
    expect(result).toMatchObject({ ok: false, status: 0, kind: "timeout" });
    expect(result.durationMs).toBeLessThan(TIMEOUT_MS + 300);
  });

  it("reports a refused connection as a network failure, and a non-http(s) target as refused", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await sender.send({ ...webhook("/ok"), url: `http://127.0.0.1:${port}/ok` })).toMatchObject({
      ok: false,
      status: 0,
      kind: "network",
    });
    expect(await sender.send({ ...webhook("/ok"), url: "ftp://127.0.0.1/ok" })).toMatchObject({
      ok: false,
      status: 0,
      kind: "refused",
    });
  });

  it("still sends on the same sender after the timeouts and aborted answers", async () => {
    expect(await sender.send(webhook("/ok"))).toMatchObject({ ok: true, status: 204 });
  });
});
