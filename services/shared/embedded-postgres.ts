// The embedded default: PGlite (PostgreSQL compiled to WebAssembly) served on
// a loopback port by pglite-socket, so the services use the very same
// PostgreSQL driver as in production. PGlite is a single-session database;
// each service gets its own instance (its own folder under DATA_DIR), so one
// service holding a transaction never stalls another, and a pool of one
// connection, so its transactions are serialised, never interleaved
// (measured: README, "The embedded default").
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

/** Pool size for a service on embedded PostgreSQL. */
// One: with several connections, a statement failing inside a transaction
// (a unique violation a service expects and handles) made pglite-socket drop
// connections ("Connection terminated unexpectedly"); a single connection
// serialises transactions in the pool instead, and is what the tests prove.
export const EMBEDDED_POOL_MAX = 1;

export interface EmbeddedPostgres {
  url: string;
  close(): Promise<void>;
}

export async function startEmbeddedPostgres(dataDir: string, name: string): Promise<EmbeddedPostgres> {
  const dir = path.resolve(dataDir, "pglite", name);
  await mkdir(dir, { recursive: true });
  const db = await PGlite.create({ dataDir: dir });
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 4 });
  await server.start();
  // The pool holds one connection; the few spare slots only cover a
  // reconnect racing the server's cleanup of the previous socket.
  const hostPort = server.getServerConn();
  return {
    url: `postgres://postgres:postgres@${hostPort}/postgres?sslmode=disable`,
    close: async () => {
      await server.stop();
      await db.close();
    },
  };
}
