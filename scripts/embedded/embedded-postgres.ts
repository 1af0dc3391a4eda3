// The embedded default: PGlite (PostgreSQL compiled to WebAssembly) served on
// a Unix socket inside the owner-only data folder (pglite-server.ts), so the
// services use the very same PostgreSQL driver as in production, and no other
// user's process can reach a database that asks no password. PGlite is a single-session database:
// `npm start`'s services share one instance (DATA_DIR/pglite/platform), each
// with a pool of one connection, and each request and transaction has the
// session to itself (docs/architecture.md, "The embedded default").
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { PGlite } from "@electric-sql/pglite";
import { NodeFS } from "@electric-sql/pglite/nodefs";
import { copyFolder } from "./copy-folder.js";
import {
  INITDB_PARAMS,
  SHARED_BUFFERS,
  embeddedTemplate,
  initialised,
  migratedTemplate,
  type SchemaMigrations,
} from "./embedded-templates.js";
import { startEmbeddedVacuum } from "./embedded-vacuum.js";
import type { Logger } from "../../services/shared/logger.js";
import { servePglite } from "./pglite-server.js";
import { PRIVATE_DIR_MODE, makePrivateFolder } from "../private-folder.js";

/** Pool size for a service on embedded PostgreSQL. */
// One: the session serves one request or transaction at a time whatever the
// pool (pglite-server.ts), so more connections would only wait there; with
// pglite-socket's own queue, several would drop connections when a
// statement fails inside a transaction (a unique violation a service
// expects and handles).
export const EMBEDDED_POOL_MAX = 1;

// Memory: shared_buffers (embedded-templates.ts) also for folders whose postgresql.conf lacks it.
const START_PARAMS = [...PGlite.defaultStartParams, "-c", SHARED_BUFFERS];

// A fresh folder runs initdb, which takes far more memory than a running
// instance and leaves most of it held by the instance that ran it
// (docs/architecture.md, "The embedded default"). So initdb runs in a worker thread, whose memory is
// returned when it exits, and one at a time: the instances then open the
// initialised folder as on a restart. The worker is inline so that it runs the
// same whether this module is TypeScript (tsx, vitest) or compiled JavaScript;
// it imports PGlite by the path this module resolves.
const PGLITE_URL = pathToFileURL(createRequire(import.meta.url).resolve("@electric-sql/pglite")).href;
const INITDB_WORKER = `
import { workerData } from "node:worker_threads";
import { PGlite } from ${JSON.stringify(PGLITE_URL)};
const db = await PGlite.create({ dataDir: workerData.dir, startParams: workerData.startParams, initDbStartParams: workerData.initDbStartParams });
await db.close();
`;

// Privacy. The folders hold member emails and password hashes (in the WAL
// too): only the owner may read them. PGlite's C library creates files with
// a umask of its own (022, not the process's) and then sets the mode it asked
// for, 0666 for some, so the process umask does not reach them: the calls its
// node filesystem makes are narrowed to the owner instead, and the files
// initdb made (in a worker, with plain PGlite) are set right afterwards.
const OWNER_ONLY = ~0o077;

interface NodeFsOps {
  node_ops: {
    mknod(parent: unknown, name: string, mode: number, dev: unknown): unknown;
    setattr(node: unknown, attr: { mode?: number }): void;
  };
  stream_ops: { setattr(stream: unknown, attr: { mode?: number }): void };
}

function ownerOnly(nodefs: NodeFsOps): void {
  const { node_ops: node, stream_ops: stream } = nodefs;
  const mknod = node.mknod.bind(node);
  const setattr = node.setattr.bind(node);
  const streamSetattr = stream.setattr.bind(stream);
  const narrow = (attr: { mode?: number }) =>
    attr.mode === undefined ? attr : { ...attr, mode: attr.mode & OWNER_ONLY };
  node.mknod = (parent, name, mode, dev) => mknod(parent, name, mode & OWNER_ONLY, dev);
  node.setattr = (n, attr) => setattr(n, narrow(attr));
  stream.setattr = (s, attr) => streamSetattr(s, narrow(attr));
}

type ModuleOptions = Parameters<NodeFS["init"]>[1];
type PostgresModule = Parameters<NonNullable<ModuleOptions["preRun"]>[number]>[0];

/** PGlite's node filesystem, whose folders and files only the owner may read or write. */
class OwnerOnlyNodeFS extends NodeFS {
  override init(pg: PGlite, opts: ModuleOptions) {
    const narrow = (mod: PostgresModule) => ownerOnly(mod.FS.filesystems.NODEFS as unknown as NodeFsOps);
    return super.init(pg, { ...opts, preRun: [...(opts.preRun ?? []), narrow] });
  }
}

let initdbQueue: Promise<unknown> = Promise.resolve();

/** Runs initdb on `dir` in a worker thread, after any initdb already running. */
function initialise(dir: string): Promise<void> {
  const run = () =>
    new Promise<void>((resolve, reject) => {
      const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(INITDB_WORKER)}`), {
        workerData: { dir, startParams: START_PARAMS, initDbStartParams: INITDB_PARAMS },
        // Plain JavaScript: no need for the parent's loaders (tsx).
        execArgv: [],
      });
      worker.once("error", reject);
      worker.once("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`PGlite initdb in ${dir} exited with code ${code}`)),
      );
    });
  const done = initdbQueue.then(run, run);
  initdbQueue = done.catch(() => undefined);
  return done;
}

const folder = (dataDir: string, name: string) => path.resolve(dataDir, "pglite", name);

// libpq's name for a server's socket in its folder: .s.PGSQL.<port>.
const SOCKET_PORT = 5432;
const SOCKET_FILE = `.s.PGSQL.${SOCKET_PORT}`;
// unix(7): sun_path holds 108 bytes, its terminating NUL included.
const SOCKET_PATH_MAX = 107;

/**
 * The owner-only folder of a database's socket: beside its data folder, or,
 * where that path is too long for a socket, a fresh private folder (mkdtemp
 * makes it 0700) under the system's temporary folder, removed on close.
 */
async function socketFolder(dataDir: string, name: string): Promise<{ dir: string; temporary: boolean }> {
  const dir = `${folder(dataDir, name)}.socket`;
  if (Buffer.byteLength(path.join(dir, SOCKET_FILE)) <= SOCKET_PATH_MAX) {
    await makePrivateFolder(dir);
    return { dir, temporary: false };
  }
  return { dir: await mkdtemp(path.join(tmpdir(), "bizcard-pg-")), temporary: true };
}

/** A connection URL for the socket in `dir`: the driver takes a host that is a path as a socket's folder. */
const socketUrl = (dir: string) =>
  `postgres://postgres@${encodeURIComponent(dir)}:${SOCKET_PORT}/postgres?sslmode=disable`;

/**
 * Initialises the folders of `names` that have no database yet: copies of
 * the install's migrated template for that database when `migrations` name
 * its schemas and the template is usable (embedded-templates.ts), else of
 * the install's cluster, or, without one, initdb runs once and the others
 * start as copies of its result (a cleanly shut down cluster folder; each
 * instance is a server of its own, so they may share initdb's system
 * identifier).
 */
export async function prepareEmbeddedPostgres(
  dataDir: string,
  names: readonly string[],
  migrations: DatabaseMigrations = {},
): Promise<void> {
  await Promise.all(prepareEach(dataDir, names, migrations));
}

/** For each database that may start as a migrated template, its schemas' migrations. */
export type DatabaseMigrations = Readonly<Record<string, SchemaMigrations>>;

/** The same, one promise per name (in order), each settled as soon as that folder is ready. */
function prepareEach(dataDir: string, names: readonly string[], migrations: DatabaseMigrations): Promise<void>[] {
  const dirs = names.map((n) => folder(dataDir, n));
  const missing = dirs.filter((dir) => !initialised(dir));
  if (missing.length === 0) return dirs.map(() => Promise.resolve());
  // The install's migrated copy when there is one (the schemas are there: the
  // start's migrations find nothing or only newer ones to apply), else the
  // install's cluster: no initdb at all.
  const migrated = new Map(
    names.map((n, i) => [dirs[i]!, migrations[n] ? migratedTemplate(n, migrations[n]) : undefined]),
  );
  const plain = missing.filter((dir) => !migrated.get(dir));
  const template = plain.length > 0 ? embeddedTemplate() : undefined;
  // Without the install's cluster, initdb runs once, in the first folder that needs it.
  const source: Promise<string | undefined> =
    plain.length === 0 || template
      ? Promise.resolve(template)
      : (async () => {
          await mkdir(plain[0]!, { recursive: true, mode: PRIVATE_DIR_MODE });
          await initialise(plain[0]!);
          await makePrivateFolder(plain[0]!);
          return plain[0]!;
        })();
  // The copies one after another, so that the first instance can start while the next folders
  // are copied; each keeps its source's modes (0700/0600: initdb's result is made the owner's
  // above, the template by its script), and each start checks them again.
  let previous: Promise<unknown> = source;
  const copy = async (dir: string, after: Promise<unknown>) => {
    const from = migrated.get(dir) ?? (await source)!;
    await after.catch(() => undefined);
    if (from === dir) return;
    // Copied beside it and renamed, so that an interrupted copy is never taken for a database.
    const partial = `${dir}.partial`;
    await mkdir(path.dirname(dir), { recursive: true, mode: PRIVATE_DIR_MODE });
    await rm(partial, { recursive: true, force: true });
    await copyFolder(from, partial, PRIVATE_DIR_MODE);
    await rm(path.join(partial, "template.json"), { force: true });
    await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
  };
  return dirs.map((dir) => {
    if (!missing.includes(dir)) return Promise.resolve();
    const copied = copy(dir, previous);
    previous = copied;
    return copied;
  });
}

/**
 * Prepares and starts the databases of `names` (in order): each instance
 * starts as soon as its folder is ready, so that PGlite's start (on this
 * thread) overlaps the other folders' copies (the file system's work, in
 * libuv's threads), which on a first start copy hundreds of files. If any
 * fails, those started are closed again.
 */
export async function startEmbeddedDatabases(
  dataDir: string,
  names: readonly string[],
  migrations: DatabaseMigrations = {},
  vacuum?: VacuumOptions,
): Promise<EmbeddedPostgres[]> {
  const ready = prepareEach(dataDir, names, migrations);
  const started = await Promise.allSettled(
    names.map((name, i) => ready[i]!.then(() => startEmbeddedPostgres(dataDir, name, vacuum))),
  );
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (!failed) return started.map((s) => (s as PromiseFulfilledResult<EmbeddedPostgres>).value);
  await Promise.allSettled(started.map((s) => (s.status === "fulfilled" ? s.value.close() : undefined)));
  throw failed.reason;
}

export interface EmbeddedPostgres {
  /** Its connection URL: the socket's folder as the host. */
  url: string;
  close(): Promise<void>;
}

/** Autovacuum's work on the database (embedded-vacuum.ts), for a platform that runs on it: `npm start`. */
export interface VacuumOptions {
  /** Its lines. */
  logger?: Logger;
}

/** `vacuum`: with autovacuum's work done on it, every minute (embedded-vacuum.ts); without, none (tests, the install's template). */
export async function startEmbeddedPostgres(
  dataDir: string,
  name: string,
  vacuum?: VacuumOptions,
): Promise<EmbeddedPostgres> {
  const dir = folder(dataDir, name);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!initialised(dir)) await initialise(dir);
  // Also a folder found readable by others: made the owner's only again.
  await makePrivateFolder(dir);
  const db = await PGlite.create({ fs: new OwnerOnlyNodeFS(dir), startParams: START_PARAMS });
  const sockets = await socketFolder(dataDir, name);
  const server = await servePglite(db, path.join(sockets.dir, SOCKET_FILE));
  const url = socketUrl(sockets.dir);
  // No autovacuum runs in PGlite: this does its work (embedded-vacuum.ts).
  const vacuuming = vacuum ? startEmbeddedVacuum(url, vacuum.logger) : undefined;
  return {
    url,
    close: async () => {
      await vacuuming?.stop();
      await server.close();
      await db.close();
      if (sockets.temporary) await rm(sockets.dir, { recursive: true, force: true });
    },
  };
}
