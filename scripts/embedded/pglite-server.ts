// One PGlite (a single PostgreSQL session) served to several connections on a Unix socket, the way
// `npm start`'s services share one embedded database. PGlite asks no password, so the socket is the
// access control: it is the owner's only, in a folder only the owner may enter. pglite-socket parses
// each connection's wire protocol (PGLiteSocketHandler); SessionQueue replaces its queue.
import { chmod, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketHandler } from "@electric-sql/pglite-socket";

interface Pending {
  connection: number;
  message: Uint8Array;
  onData: (data: Uint8Array) => void;
  resolve: (bytes: number) => void;
  reject: (err: unknown) => void;
}

const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
const PROTOCOL_3 = 196608;

/** Whether `message` ends a request: a Sync, a simple Query, or a startup message (no type byte). */
function endsRequest(message: Uint8Array): boolean {
  if (message[0] === SYNC || message[0] === QUERY) return true;
  return message.length >= 8 && new DataView(message.buffer, message.byteOffset, 8).getInt32(4) === PROTOCOL_3;
}

/**
 * The session's owner and the messages waiting for it, in the shape PGLiteSocketHandler calls.
 * pglite-socket's own queue cannot share the session: it may hand it to another connection between a
 * Parse and its Bind, leaves a gone connection's transaction open for the next one, and stops for good
 * when an exec throws (test/platform/pglite-server.test.ts). This one gives a connection the session
 * from its first message until a request ends (PostgreSQL protocol, "Extended Query": at a Sync; a
 * simple Query is one request too) with no transaction block open (BEGIN until COMMIT or ROLLBACK, a
 * failed block included); then the connection that has waited longest gets it. A connection that goes
 * away inside a transaction has it rolled back.
 */
export class SessionQueue {
  private readonly waiting: Pending[] = [];
  private owner: number | undefined;
  private running = false;

  constructor(private readonly db: PGlite) {}

  enqueue(connection: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ connection, message, onData, resolve, reject });
      void this.run();
    });
  }

  getQueueLength(): number {
    return this.waiting.length;
  }

  /** The connection went away: its waiting messages are dropped. */
  clearQueueForHandler(connection: number): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      if (this.waiting[i]!.connection !== connection) continue;
      this.waiting.splice(i, 1)[0]!.reject(new Error("connection closed"));
    }
  }

  /** ... and the session is taken back from it, rolling back what it left open. */
  async clearTransactionIfNeeded(connection: number): Promise<void> {
    if (this.owner !== connection) return;
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK").catch(() => undefined);
    this.owner = undefined;
    void this.run();
  }

  private next(): Pending | undefined {
    const at = this.owner === undefined ? 0 : this.waiting.findIndex((p) => p.connection === this.owner);
    return at < 0 ? undefined : this.waiting.splice(at, 1)[0];
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (let item = this.next(); item; item = this.next()) {
        this.owner = item.connection;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(item!.message, {
              onRawData: (data) => {
                bytes += data.length;
                item!.onData(data);
              },
            }),
          );
          item.resolve(bytes);
        } catch (err) {
          item.reject(err);
        }
        if (endsRequest(item.message) && !this.db.isInTransaction()) this.owner = undefined;
      }
    } finally {
      this.running = false;
    }
  }
}

/** Serves `db` on the Unix socket `socket` (its folder must be the owner's only), connections sharing its session. */
export async function servePglite(db: PGlite, socket: string): Promise<{ close(): Promise<void> }> {
  await db.waitReady;
  const queue = new SessionQueue(db);
  const handlers = new Set<PGLiteSocketHandler>();
  const server: Server = createServer((connection: Socket) => {
    // The handler's type names pglite-socket's own queue class; this one has its shape.
    const handler = new PGLiteSocketHandler({ queryQueue: queue as never, closeOnDetach: true });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener("close", forget);
    handler.addEventListener("error", forget);
    handler.attach(connection).catch(() => {
      forget();
      connection.destroy();
    });
  });
  // A socket file a stopped process left behind would refuse the listen.
  await rm(socket, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socket, () => resolve());
  });
  await chmod(socket, 0o600);
  return {
    close: async () => {
      await Promise.all([...handlers].map((h) => h.detach(true)));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
