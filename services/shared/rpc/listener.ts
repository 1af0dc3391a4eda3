// One port for HTTP/1.1 and h2c with prior knowledge (RFC 9113 §3.3), as a
// stock Connect client may speak either. Node serves each on its own server
// type, so the first bytes pick which: RFC 9113 §3.4 "the client connection
// preface starts with a sequence of 24 octets [...] PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export type ServerRequest = http.IncomingMessage | http2.Http2ServerRequest;
export type ServerResponse = http.ServerResponse | http2.Http2ServerResponse;
export type RequestHandler = (req: ServerRequest, res: ServerResponse) => void;

export interface Listener {
  server: net.Server;
  /** Stops accepting, lets in-flight requests finish, then drops idle and, after `graceMs`, every connection. */
  close(graceMs: number): Promise<void>;
}

export function createListener(handler: RequestHandler): Listener {
  // Nagle off: an answer goes out as soon as it is written (Node's default, said here on purpose).
  const h1 = http.createServer({ keepAliveTimeout: 65_000, noDelay: true }, handler);
  // The http server never listens itself (the net server below hands it connections): told it
  // does, it tracks them, so that closeIdleConnections() and closeAllConnections() find them.
  h1.emit("listening");
  const h2 = http2.createServer({}, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const server = net.createServer({ noDelay: true }, (socket) => {
    socket.once("data", (first: Buffer) => {
      const n = Math.min(first.length, PREFACE.length);
      const h2c = n >= 3 && first.subarray(0, n).equals(PREFACE.subarray(0, n));
      // The bytes read go back to the socket: the http server reads them first, and an HTTP/2
      // session takes what the socket holds before it reads the connection's handle itself.
      socket.pause();
      socket.unshift(first);
      if (h2c) return void h2.emit("connection", socket);
      h1.emit("connection", socket);
      socket.resume();
    });
    socket.on("error", () => socket.destroy());
  });
  return {
    server,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        h1.close();
        for (const s of sessions) s.close();
        setTimeout(() => {
          h1.closeAllConnections();
          for (const s of sessions) s.destroy();
        }, graceMs).unref();
      }),
  };
}
