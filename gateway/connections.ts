// The gateway's sockets: answers written before (or instead of) fastify's
// request cycle, in the one error shape with an x-request-id, and the drain
// on close that serves requests already received but does not wait for
// clients that stopped sending.
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
 * The request being served on a socket, kept on the socket itself, not in a
 * Map of the Connections. A long-lived Map that gains and loses an entry per
 * request replaces its table every few requests, and V8 leaves the replaced
 * table pointing at its successor (for iterators in progress). Once a full
 * collection has moved the table to the old generation, each replaced table
 * is old garbage holding the next one, and young collections take every old
 * object's pointers as roots until the next full collection: each table, and
 * the requests in it, outlives its young collections from the first full
 * collection on. Under the token endpoint's load that promotes far more per
 * young collection than the slot does, full collections follow one another,
 * and every request pays for them in CPU.
 */
const IN_FLIGHT = Symbol("in-flight request");
type TrackedSocket = Socket & { [IN_FLIGHT]?: InFlight };

/**
 * Writes a whole answer on the socket and closes it: for the moments when no
 * reply object can write one (the head could not be parsed, or the request's
 * body never finished arriving).
 */
export function writeAnswerAndClose(
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

/** Node's clientError codes as answers (the request never reached a route). */
function clientErrorAnswer(code: string | undefined): [number, string, string] {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, "invalid_request", "the request headers are too large"];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      // RFC 9110 §15.5.9: "The 408 (Request Timeout) status code indicates that the
      // server did not receive a complete request message within the time that it
      // was prepared to wait."
      return [408, "request_timeout", "the request did not arrive completely in time; send it again"];
    case "HPE_INVALID_TRANSFER_ENCODING":
      // RFC 9112 §6.3: "If a Transfer-Encoding header field is present in a
      // request and the chunked transfer coding is not the final encoding [...]
      // the server MUST respond with the 400 (Bad Request) status code and then
      // close the connection."
      return [400, "invalid_request", "the Transfer-Encoding must end with chunked, applied once"];
    case "HPE_INVALID_VERSION":
    case "HPE_PAUSED_H2_UPGRADE":
      // RFC 9110 §15.6.6: "The 505 (HTTP Version Not Supported) status code
      // indicates that the server does not support, or refuses to support, the
      // major version of HTTP that was used in the request message." (The
      // parser refuses versions other than 1.0, 1.1 and 2.0, and HTTP/2's
      // connection preface.)
      return [505, "http_version_not_supported", "this server speaks HTTP/1.1 (and HTTP/1.0)"];
    default:
      return [400, "invalid_request", "the request is not valid HTTP"];
  }
}

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
    const [status, error, description] = clientErrorAnswer(code);
    this.logger.info({ requestId, status, reason: code }, "request refused on its connection");
    writeAnswerAndClose(socket, requestId, status, error, description);
  };

  /**
   * The server's "connect" event: node hands a CONNECT request over as a bare
   * socket and, without a listener, closes it without a word. This server is
   * no proxy; RFC 9110 §15.5.6: "The origin server MUST generate an Allow
   * header field in a 405 response containing a list of the target resource's
   * currently supported methods", and §10.2.1: "An empty Allow field value
   * indicates that the resource allows no methods".
   */
  readonly onConnect = (request: IncomingMessage, socket: Socket): void => {
    const requestId = acceptRequestId(request.headers[REQUEST_ID_HEADER] as string | undefined) ?? randomUUID();
    this.logger.info({ requestId, status: 405, method: "CONNECT" }, "request refused on its connection");
    writeAnswerAndClose(
      socket,
      requestId,
      405,
      "method_not_allowed",
      "this server is not a proxy: CONNECT is not served here",
      { Allow: "" },
    );
  };

  /**
   * On close: requests already received are served, each answer closing its
   * connection; idle connections, heads still arriving and bodies still
   * arriving (stalled or slow) are not waited for: such a body gets 503 with
   * Retry-After, since nothing of it was acted on and it is safe to send again.
   */
  private drain(): void {
    for (const socket of this.sockets) {
      const current = socket[IN_FLIGHT];
      if (!current) {
        socket.destroy();
      } else if (!current.request.raw.complete) {
        if (current.reply.raw.headersSent) socket.destroy();
        else {
          writeAnswerAndClose(
            socket,
            current.request.id,
            503,
            "temporarily_unavailable",
            "the server is shutting down; send the request again",
            {
              "Retry-After": "1",
            },
          );
        }
      } else if (!current.reply.raw.headersSent) {
        current.reply.header("connection", "close");
      }
    }
  }
}
