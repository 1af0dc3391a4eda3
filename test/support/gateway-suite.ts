// The REST gateway as the gateway suites drive it, over real HTTP in front of
// the real auth and organisation services (the platform fixture), with the
// helpers that check what a client sees: every error has the one body shape,
// never HTML, never a stack trace. Each suite file calls useGatewaySuite()
// once; the bindings below are set before its tests run.
import net, { type AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect } from "vitest";
import type { Config } from "../../services/shared/config.js";
import { createLogger } from "../../services/shared/logger.js";
import { startPlatform, type Platform } from "./platform.js";
import { freePort } from "./processes.js";

const TOKEN = "g".repeat(40);
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const FORM = "application/x-www-form-urlencoded";
export const JSON_TYPE = "application/json";

export let platform: Platform;
/** The gateway in front of the auth and organisation services. */
export let base: string;
/** A second gateway whose auth service is on a port where nothing listens. */
export let brokenBase: string;
/** A third gateway that presents the wrong internal credential. */
export let misconfiguredBase: string;
/** The config of the file's services, and that config with more values (the same stream and subject prefix). */
export let baseConfig: Config;
export let configWith: (overrides: Record<string, string>) => Config;
export const logger = createLogger("gateway-test", process.env.TEST_LOG_LEVEL ?? "silent");

/** Listens on a loopback port; the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

export function useGatewaySuite(): void {
  beforeAll(async () => {
    platform = await startPlatform({ token: TOKEN, auth: true, gateway: true });
    base = platform.base;
    baseConfig = platform.config;
    configWith = platform.configWith;
    const { organisation, auth } = platform;
    const closed = `http://127.0.0.1:${await freePort()}`;
    brokenBase = (
      await platform.addGateway({
        config: { AUTH_RPC_URL: closed },
        serviceUrls: { auth: closed, organisation: organisation.server.url },
      })
    ).base;
    misconfiguredBase = (
      await platform.addGateway({
        config: { INTERNAL_RPC_TOKEN: "w".repeat(40) },
        serviceUrls: { auth: auth.server.url, organisation: organisation.server.url },
      })
    ).base;
  });

  afterAll(async () => {
    await platform?.stop();
  });
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

export async function call(path: string, init: RequestInit = {}, at = base): Promise<Answer> {
  const res = await fetch(`${at}${path}`, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  body: unknown;
  /** The server closed the connection after this answer. */
  closed: boolean;
}

export function parseRaw(data: string, closed = true): RawAnswer {
  const end = data.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = data.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines)
    headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
  const text = data.slice(end + 4);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: Number(statusLine!.split(" ")[1]), headers, text, body, closed };
}

/**
 * One exchange over a raw socket, for what fetch cannot send: the first final
 * answer (after an optional 100 Continue), once complete or once the server
 * closes; undefined when the server closed without a word.
 */
export function rawExchange(
  at: string,
  request: string | Buffer,
  options: { after100?: string } = {},
): Promise<RawAnswer | undefined> {
  return new Promise((resolve) => {
    const url = new URL(at);
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
    let data = "";
    const done = (closed: boolean) => {
      socket.destroy();
      resolve(data.includes("\r\n\r\n") ? parseRaw(data, closed) : undefined);
    };
    socket.on("data", (d) => {
      data += d;
      if (/^HTTP\/1\.1 100 /.test(data) && data.includes("\r\n\r\n")) {
        data = data.slice(data.indexOf("\r\n\r\n") + 4);
        if (options.after100 !== undefined) socket.write(options.after100);
      }
      const end = data.indexOf("\r\n\r\n");
      const length = end < 0 ? undefined : /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end + 2))?.[1];
      if (length !== undefined && Buffer.byteLength(data.slice(end + 4)) >= Number(length)) {
        // Complete: did the server also close? Give it the chance to say so.
        socket.once("end", () => done(true));
        setImmediate(() =>
          socket.readableEnded || socket.destroyed || /\r\nconnection: *close/i.test(data) ? undefined : done(false),
        );
      }
    });
    socket.on("close", () => done(true));
    socket.on("error", () => done(true));
  });
}

/** A raw answer in the one error shape, with a request id (the given one when the client sent it). */
export function expectRawError(a: RawAnswer | undefined, status: number, error: string, requestId?: string): void {
  expect(a, "an answer").toBeDefined();
  expect(a!.status, a!.text).toBe(status);
  expect(a!.headers["content-type"]).toMatch(/^application\/json/);
  expect(a!.headers["x-content-type-options"]).toBe("nosniff");
  expect(a!.body).toEqual({ error, error_description: expect.any(String) });
  expect(a!.headers["x-request-id"]).toMatch(requestId === undefined ? UUID : new RegExp(`^${requestId}$`));
}

/** Nothing a client reads ever carries HTML or a stack frame. */
export function expectClean(a: Answer): void {
  expect(a.text.toLowerCase()).not.toContain("<html");
  expect(a.text.toLowerCase()).not.toContain("<!doctype");
  expect(a.text).not.toMatch(/\bat .+[:(]\d+/);
  expect(a.text).not.toMatch(/\.(ts|js):\d+/);
  expect(a.text).not.toContain("node_modules");
  expect(a.text).not.toMatch(/FST_ERR/);
}

/** An error in the one shape: status, JSON content type, exactly {error, error_description}, never stored. */
export function expectError(a: Answer, status: number, error: string, description?: RegExp): void {
  expectClean(a);
  expect(a.status, a.text).toBe(status);
  expect(a.headers.get("content-type")).toMatch(/^application\/json/);
  expect(a.headers.get("x-content-type-options")).toBe("nosniff");
  expect(a.headers.get("cache-control"), "an error answer is never stored").toBe("no-store");
  expect(a.body).toEqual({ error, error_description: expect.any(String) });
  const desc = (a.body as { error_description: string }).error_description;
  expect(desc.length).toBeGreaterThan(0);
  if (description) expect(desc).toMatch(description);
  expect(a.headers.get("x-request-id")).toBeTruthy();
}

export function expectNoStore(a: Answer): void {
  expect(a.headers.get("cache-control")).toBe("no-store");
}

export const form = (fields: [string, string][] | Record<string, string>) =>
  new URLSearchParams(Array.isArray(fields) ? fields : Object.entries(fields)).toString();

/** POST /oauth/token with a raw body and content type. */
export function token(
  body: string | undefined,
  contentType: string | undefined,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return call("/oauth/token", {
    method: "POST",
    headers: { ...(contentType ? { "content-type": contentType } : {}), ...headers },
    body,
  });
}

/** The same parameters sent form-encoded and as JSON. */
export const encodings = [
  { name: "form", send: (p: Record<string, string>, h?: Record<string, string>) => token(form(p), FORM, h) },
  {
    name: "JSON",
    send: (p: Record<string, string>, h?: Record<string, string>) => token(JSON.stringify(p), JSON_TYPE, h),
  },
];

export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
