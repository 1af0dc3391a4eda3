// HTTP/1.1 framing the gateway cannot honour, over raw sockets as a client
// (or a proxy) sends it: a transfer coding other than chunked (501), a major
// version other than 1 (505), and CONNECT (405). Each is an answer in the one
// error shape with an x-request-id, and the connection is closed after it
// (what follows on it cannot be framed). The gateway needs no service for
// these: it answers before any route runs.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type Platform } from "../support/platform.js";

let platform: Platform;
let port: number;

beforeAll(async () => {
  // The gateway alone: no service of the platform is started.
  platform = await startPlatform({ token: "e".repeat(40), organisation: false, gateway: { serviceUrls: {} } });
  port = Number(new URL(platform.base).port);
});

afterAll(async () => {
  await platform?.stop();
});

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (within 1 s of the answer). */
  closed: boolean;
}

/** Sends `request` as written and reads the first answer; then whether the server closes. */
function exchange(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(request));
    let data = "";
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return reject(new Error(`no answer (closed: ${closed}): ${JSON.stringify(data)}`));
      const [statusLine, ...lines] = data.slice(0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers["content-length"] ?? 0);
      resolve({
        status: Number(statusLine!.split(" ")[1]),
        headers,
        body: data.slice(end + 4, end + 4 + length),
        closed,
      });
    };
    socket.on("data", (d) => {
      data += d;
      // An answer in hand: give the server 1 s to close the connection.
      timer ??= setTimeout(() => finish(false), 1_000);
    });
    socket.on("close", () => finish(true));
    socket.on("error", () => undefined);
  });
}

function expectAnswer(answer: RawAnswer, status: number, error: string, requestId?: string): void {
  expect(answer.status, answer.body).toBe(status);
  expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["error", "error_description"]);
  expect(body.error).toBe(error);
  expect(body.error_description).toEqual(expect.any(String));
  if (requestId) expect(answer.headers["x-request-id"]).toBe(requestId);
  else expect(answer.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  expect(answer.headers["x-content-type-options"]).toBe("nosniff");
}

const CHUNKED_FORM = "5\r\nhello\r\n0\r\n\r\n";

describe("Transfer-Encoding", () => {
  it("a transfer coding other than chunked is 501 not_implemented, and the connection is closed (RFC 9112 §6.1)", async () => {
    for (const codings of ["gzip, chunked", "deflate,chunked", "identity, chunked", "x-custom , chunked"]) {
      const answer = await exchange(
        `POST /oauth/token HTTP/1.1\r\nHost: x\r\nX-Request-Id: te-${codings.length}\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: ${codings}\r\n\r\n${CHUNKED_FORM}`,
      );
      expectAnswer(answer, 501, "not_implemented", `te-${codings.length}`);
      expect(answer.headers.connection).toBe("close");
      expect(answer.closed, codings).toBe(true);
    }
    // Two field lines are one list.
    const split = await exchange(
      `POST /oauth/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n${CHUNKED_FORM}`,
    );
    expectAnswer(split, 501, "not_implemented");
    expect(split.closed).toBe(true);
  });

  it("chunked alone is read as before; without chunked last, or with it twice, is 400 and closed (RFC 9112 §6.3)", async () => {
    const chunked = await exchange(
      `POST /oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: Chunked\r\n\r\n7\r\na=1&a=2\r\n0\r\n\r\n`,
    );
    // The body was read: the form parser's own answer about its parameters.
    expectAnswer(chunked, 400, "invalid_request");
    expect(JSON.parse(chunked.body).error_description).toBe("parameter a is included more than once");
    expect(chunked.closed).toBe(false);

    for (const codings of ["gzip", "chunked, gzip", "chunked, chunked"]) {
      for (const type of ["", "Content-Type: application/x-www-form-urlencoded\r\n"]) {
        const answer = await exchange(
          `POST /oauth/token HTTP/1.1\r\nHost: x\r\n${type}Transfer-Encoding: ${codings}\r\n\r\nhello`,
        );
        expectAnswer(answer, 400, "invalid_request");
        expect(JSON.parse(answer.body).error_description).toMatch(/chunked/);
        expect(answer.closed, codings).toBe(true);
      }
    }
  });
});

describe("the HTTP version", () => {
  it("a request line of HTTP/2.0 or another major version is 505, and the connection is closed (RFC 9110 §15.6.6)", async () => {
    for (const version of ["HTTP/2.0", "HTTP/3.0"]) {
      const answer = await exchange(
        `GET /healthz ${version}\r\nHost: x\r\nX-Request-Id: v-${version.slice(5, 6)}\r\n\r\n`,
      );
      expectAnswer(answer, 505, "http_version_not_supported", version === "HTTP/2.0" ? "v-2" : undefined);
      expect(answer.closed, version).toBe(true);
    }
    // HTTP/1.0 and 1.1 are served.
    for (const version of ["HTTP/1.0", "HTTP/1.1"]) {
      const answer = await exchange(`GET /healthz ${version}\r\nHost: x\r\n\r\n`);
      expect(answer.status, version).toBe(200);
    }
  });
});

describe("CONNECT", () => {
  it("is 405 method_not_allowed in the one shape with an (empty) Allow, not a silently closed connection", async () => {
    const answer = await exchange(
      "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nX-Request-Id: tunnel-1\r\n\r\n",
    );
    expectAnswer(answer, 405, "method_not_allowed", "tunnel-1");
    expect(answer.headers).toHaveProperty("allow");
    expect(answer.closed).toBe(true);
    const again = await exchange("CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n");
    expectAnswer(again, 405, "method_not_allowed");
  });

  it("the gateway serves on after all of them", async () => {
    const answer = await exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ status: "ok", version: expect.any(String) });
  });
});
