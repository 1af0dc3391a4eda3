// Client ID Metadata Documents for the tests: a loopback server (http, or
// https with a self-signed certificate made by openssl) answering each path
// as its test says and counting the fetches, and a browser that walks the
// authorization request, the login and the consent pages without following
// redirects by itself.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export interface DocumentAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** The body, as is (a string, or bytes in a Buffer), or JSON of an object. */
  body?: string | Buffer | object;
  /** Answer after this long (a slow document). */
  delayMs?: number;
  /** Send the body without Content-Length (chunked), in chunks of this many bytes. */
  chunked?: number;
}

export interface DocumentServer {
  /** http://127.0.0.1:<port> (or https://localhost:<port>). */
  base: string;
  /** Serves `answer(url)` at `path` (url: the document's own URL); the fetches of it are counted. */
  serve(
    path: string,
    answer: (url: string) => DocumentAnswer,
  ): { url: string; fetches: () => number; accept: () => string[] };
  close(): Promise<void>;
}

/** A self-signed certificate for localhost and 127.0.0.1: the PEM file paths (the certificate is its own CA). */
export function selfSignedCertificate(): { keyFile: string; certFile: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "cimd-tls-"));
  const keyFile = path.join(dir, "key.pem");
  const certFile = path.join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      certFile,
    ],
    { stdio: "ignore" },
  );
  return { keyFile, certFile };
}

export async function startDocumentServer(tls?: { keyFile: string; certFile: string }): Promise<DocumentServer> {
  const routes = new Map<string, { answer: (url: string) => DocumentAnswer; fetches: number; accept: string[] }>();
  let base = "";
  const handler: http.RequestListener = (req, res) => {
    const route = routes.get(req.url ?? "");
    if (!route) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    route.fetches += 1;
    route.accept.push(req.headers.accept ?? "");
    const a = route.answer(`${base}${req.url}`);
    const body = Buffer.isBuffer(a.body)
      ? a.body
      : Buffer.from(a.body === undefined ? "" : typeof a.body === "string" ? a.body : JSON.stringify(a.body));
    const send = () => {
      if (res.destroyed) return;
      const headers = { "content-type": "application/json", ...a.headers };
      if (!a.chunked)
        return void res.writeHead(a.status ?? 200, { ...headers, "content-length": String(body.length) }).end(body);
      res.writeHead(a.status ?? 200, headers);
      for (let i = 0; i < body.length; i += a.chunked) res.write(body.subarray(i, i + a.chunked));
      res.end();
    };
    if (a.delayMs) setTimeout(send, a.delayMs);
    else send();
  };
  const server = tls
    ? https.createServer({ key: readFileSync(tls.keyFile), cert: readFileSync(tls.certFile) }, handler)
    : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  base = tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`;
  return {
    base,
    serve(p, answer) {
      const route = { answer, fetches: 0, accept: [] as string[] };
      routes.set(p, route);
      return { url: `${base}${p}`, fetches: () => route.fetches, accept: () => route.accept };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export { browser, formAction, hiddenFields, unescapeHtml } from "./html-forms.js";
