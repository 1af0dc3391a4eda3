// The gateway's sockets: answers written outside fastify's request cycle (in
// the one error shape, with an x-request-id), and the drain on close that
// serves requests already received but waits for no client that stopped sending.
import { randomUUID } from "node:crypto";
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "../services/shared/logger.js";
import { REQUEST_ID_HEADER, acceptRequestId } from "../services/shared/request-context.js";

interface InFlight {
  request: FastifyRequest;
  reply: FastifyReply;
}

/**
 * The request being served on a socket, kept on the socket, not in a Map: a
 * long-lived Map churning an entry per request leaves chains of replaced
 * tables in the old generation that keep requests alive through young
 * collections, and under load every request pays for the full collections.
 */
const IN_FLIGHT = Symbol("in-flight request");
type TrackedSocket = Socket & { [IN_FLIGHT]?: InFlight };
type Answer = [status: number, error: string, description: string];

/** A whole answer written on the socket, which then closes: for when no reply object can write one. */
function writeAnswerAndClose(
  socket: Socket,
  requestId: string,
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ error, error_description: description });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    `${REQUEST_ID_HEADER}: ${requestId}`,
    "X-Content-Type-Options: nosniff",
    "Cache-Control: no-store",
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    // The rest of what the client sends is never read: the connection ends here.
    "Connection: close",
  ];
  socket.end(`${lines.join("\r\n")}\r\n\r\n${body}`, () => socket.destroy());
}

const VERSION: Answer = [505, "http_version_not_supported", "this server speaks HTTP/1.1 (and HTTP/1.0)"];

const NOT_HTTP: Answer = [400, "invalid_request", "the request is not valid HTTP"];

/** Node's clientError codes as answers (the request never reached a route); any other is NOT_HTTP. */
const CLIENT_ERRORS: Record<string, Answer> = {
  HPE_HEADER_OVERFLOW: [431, "invalid_request", "the request headers are too large"],
  // RFC 9110 §15.5.9: "did not receive a complete request message within the time that it was prepared to wait".
  ERR_HTTP_REQUEST_TIMEOUT: [408, "request_timeout", "the request did not arrive completely in time; send it again"],
  // RFC 9112 §6.3: chunked not the final encoding: "the server MUST respond with the 400 (Bad Request) status code".
  HPE_INVALID_TRANSFER_ENCODING: [400, "invalid_request", "the Transfer-Encoding must end with chunked, applied once"],
  // RFC 9110 §15.6.6: 505, "does not support [...] the major version of HTTP" (HTTP/2's preface included).
  HPE_INVALID_VERSION: VERSION,
  HPE_PAUSED_H2_UPGRADE: VERSION,
};

export class Connections {
  private readonly sockets = new Set<TrackedSocket>();

  constructor(private readonly logger: Logger) {}

  /** Tracks every socket and the request being served on it. Call before any other hook. */
  attach(app: FastifyInstance): void {
    app.server.on("connection", (socket: TrackedSocket) => {
      socket[IN_FLIGHT] = undefined;
      this.sockets.add(socket);
      socket.once("close", () => {
        this.sockets.delete(socket);
        socket[IN_FLIGHT] = undefined;
      });
    });
    app.addHook("onRequest", (request, reply, done) => {
      (request.raw.socket as TrackedSocket)[IN_FLIGHT] = { request, reply };
      done();
    });
    app.addHook("onResponse", (request, _reply, done) => {
      const socket = request.raw.socket as TrackedSocket;
      if (socket[IN_FLIGHT]?.request === request) socket[IN_FLIGHT] = undefined;
      done();
    });
    app.server.on("connect", this.onConnect);
    app.addHook("preClose", (done) => {
      this.drain();
      done();
    });
  }

  /** fastify's clientErrorHandler: malformed heads, oversize heads, requests that took too long. */
  readonly onClientError = (err: Error, socket: Socket): void => {
    const code = (err as NodeJS.ErrnoException).code;
    const current = (socket as TrackedSocket)[IN_FLIGHT];
    if (code === "ECONNRESET" || !socket.writable || current?.reply.raw.headersSent) {
      socket.destroy();
      return;
    }
    // A request whose body stalled already has an id (and the client may have sent it).
    const requestId = current?.request.id ?? randomUUID();
    const known = code !== undefined && Object.hasOwn(CLIENT_ERRORS, code);
    const [status, error, description] = known ? CLIENT_ERRORS[code]! : NOT_HTTP;
    this.logger.info({ requestId, status, reason: code }, "request refused on its connection");
    writeAnswerAndClose(socket, requestId, status, error, description);
  };

  // Node hands a CONNECT request over as a bare socket. No proxy here: 405, and RFC 9110 §10.2.1:
  // "An empty Allow field value indicates that the resource allows no methods".
  readonly onConnect = (request: IncomingMessage, socket: Socket): void => {
    const requestId = acceptRequestId(request.headers[REQUEST_ID_HEADER] as string | undefined) ?? randomUUID();
    this.logger.info({ requestId, status: 405, method: "CONNECT" }, "request refused on its connection");
    const description = "this server is not a proxy: CONNECT is not served here";
    writeAnswerAndClose(socket, requestId, 405, "method_not_allowed", description, { Allow: "" });
  };

  /**
   * On close: requests already received are served, each answer closing its
   * connection; idle connections and heads still arriving are closed, and a
   * body still arriving gets 503 with Retry-After (nothing of it was acted on).
   */
  private drain(): void {
    for (const socket of this.sockets) {
      const current = socket[IN_FLIGHT];
      if (!current) {
        socket.destroy();
      } else if (!current.request.raw.complete) {
        if (current.reply.raw.headersSent) socket.destroy();
        else {
          const description = "the server is shutting down; send the request again";
          writeAnswerAndClose(socket, current.request.id, 503, "temporarily_unavailable", description, {
            "Retry-After": "1",
          });
        }
      } else if (!current.reply.raw.headersSent) {
        current.reply.header("connection", "close");
      }
    }
  }
}
