// A request with two Authorization field lines is invalid (RFC 9110 §5.3:
// Authorization is a singleton field): whichever line a server picked, the
// client would not know which credentials counted. Every route answers 400
// invalid_request in the error shape, and nothing is issued. Node's fetch
// folds repeated headers into one line, so the requests go over raw sockets.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthService } from "../../gen/bizcard/auth/v1/auth_pb.js";
import { startPlatform, type Platform } from "../support/platform.js";

let platform: Platform;
let port: number;
type Client = { id: string; secret: string };
let first: Client;
let second: Client;

beforeAll(async () => {
  platform = await startPlatform({
    auth: true,
    webhook: false,
    delivery: false,
    gateway: true,
    member: { organisation: "Header Cards", email: "owner@headers.test", password: "correct horse battery" },
  });
  port = Number(new URL(platform.base).port);
  const make = async (name: string): Promise<Client> => {
    const res = await platform.auth
      .client(AuthService)
      .createClient({ name, ownerOrganisationId: platform.organisationId, scopes: ["organisation:read"] });
    return { id: res.client!.clientId, secret: res.clientSecret };
  };
  first = await make("First");
  second = await make("Second");
}, 60_000);

afterAll(async () => {
  await platform?.stop();
});

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** Sends one HTTP/1.1 request with the header lines exactly as given; reads its answer. */
function send(method: string, path: string, lines: string[], body = ""): Promise<Answer> {
  const head = [`${method} ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close", ...lines];
  if (body) head.push("Content-Type: application/x-www-form-urlencoded", `Content-Length: ${Buffer.byteLength(body)}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(`${head.join("\r\n")}\r\n\r\n${body}`));
    let data = "";
    socket.on("data", (d) => (data += d));
    socket.on("error", reject);
    socket.on("close", () => {
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return reject(new Error(`no answer: ${JSON.stringify(data)}`));
      const [statusLine, ...rest] = data.slice(0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of rest)
        headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      const text = data.slice(end + 4);
      resolve({
        status: Number(statusLine!.split(" ")[1]),
        headers,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      });
    });
  });
}

const TOKEN_BODY = "grant_type=client_credentials";

function expectRepeated(answer: Answer): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(400);
  expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  expect(answer.body).toEqual({
    error: "invalid_request",
    error_description: expect.stringContaining("one Authorization header"),
  });
  expect(answer.body).not.toHaveProperty("access_token");
}

describe("two Authorization header lines", () => {
  it("one line authenticates the client at the token endpoint", async () => {
    const answer = await send("POST", "/oauth/token", [`Authorization: ${basic(first.id, first.secret)}`], TOKEN_BODY);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.access_token).toEqual(expect.any(String));
  });

  it("the right secret then a wrong one is 400 invalid_request at the token endpoint, no-store, no token", async () => {
    const answer = await send(
      "POST",
      "/oauth/token",
      [`Authorization: ${basic(first.id, first.secret)}`, `Authorization: ${basic(first.id, "wrong")}`],
      TOKEN_BODY,
    );
    expectRepeated(answer);
    expect(answer.headers["cache-control"]).toBe("no-store");
  });

  it("two different clients' credentials are 400: no token for either", async () => {
    const answer = await send(
      "POST",
      "/oauth/token",
      [`Authorization: ${basic(first.id, first.secret)}`, `Authorization: ${basic(second.id, second.secret)}`],
      TOKEN_BODY,
    );
    expectRepeated(answer);
  });

  it("a resource request with two bearer tokens is 400, and so is a route that needs no credentials", async () => {
    const token = await send("POST", "/oauth/token", [`Authorization: ${basic(first.id, first.secret)}`], TOKEN_BODY);
    const bearer = `Authorization: Bearer ${String(token.body.access_token)}`;
    expect((await send("GET", "/oauth/me", [bearer])).status).toBe(200);
    expectRepeated(await send("GET", "/oauth/me", [bearer, bearer]));
    expectRepeated(await send("GET", "/healthz", ["Authorization: Bearer a", "authorization: Bearer b"]));
  });
});
