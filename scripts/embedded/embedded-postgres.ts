// The embedded default: PGlite (PostgreSQL compiled to WebAssembly) served on a Unix socket inside the
// owner-only data folder (pglite-server.ts), so the services use the same PostgreSQL driver as in
// production, and no other user's process can reach a database that asks no password. PGlite has a
// single session: `npm start`'s services share one instance, each with a pool of one connection
// (docs/architecture.md, "The embedded default").
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

/**
 * Pool size for a service on embedded PostgreSQL: the session serves one request or transaction at a
 * time whatever the pool (pglite-server.ts), so more connections would only wait there.
 */
export const EMBEDDED_POOL_MAX = 1;

// Memory: shared_buffers (embedded-templates.ts) also for folders whose postgresql.conf lacks it.
const START_PARAMS = [...PGlite.defaultStartParams, "-c", SHARED_BUFFERS];

// initdb takes far more memory than a running instance and leaves most of it held by the instance that
// ran it (docs/architecture.md, "The embedded default"), so it runs in a worker thread, whose memory is
// returned when it exits, one at a time. The worker is inline so that it runs the same from TypeScript
// (tsx, vitest) or compiled JavaScript; it imports PGlite by the path this module resolves.
const PGLITE_URL = pathToFileURL(createRequire(import.meta.url).resolve("@electric-sql/pglite")).href;
const INITDB_WORKER = `
import { workerData } from "node:worker_threads";
import { PGlite } from ${JSON.stringify(PGLITE_URL)};
const db = await PGlite.create({ dataDir: workerData.dir, startParams: workerData.startParams, initDbStartParams: workerData.initDbStartParams });
await db.close();
`;

// Privacy: the folders hold member emails and password hashes, in the WAL too. PGlite's C library
// creates files with a umask of its own and then sets the mode it asked for, 0666 for some, so the
// process umask does not reach them: its node filesystem's calls are narrowed to the owner instead,
// and the files initdb made (in a worker, with plain PGlite) are set right afterwards.
const OWNER_ONLY = ~0o077;

interface NodeFsOps {
  node_ops: {
    mknod(parent: unknown, name: string, mode: number, dev: unknown): unknown;
    setattr(node: unknown, attr: { mode?: number }): void;
  };
  stream_ops: { setattr(stream: unknown, attr: { mode?: number }): void };
}
type ModuleOptions = Parameters<NodeFS["init"]>[1];
type PostgresModule = Parameters<NonNullable<ModuleOptions["preRun"]>[number]>[0];

function ownerOnly(mod: PostgresModule): void {
  const { node_ops: node, stream_ops: stream } = mod.FS.filesystems.NODEFS as unknown as NodeFsOps;
  const mknod = node.mknod.bind(node);
  const setattr = node.setattr.bind(node);
  const streamSetattr = stream.setattr.bind(stream);
  const narrow = (attr: { mode?: number }) =>
    attr.mode === undefined ? attr : { ...attr, mode: attr.mode & OWNER_ONLY };
  node.mknod = (parent, name, mode, dev) => mknod(parent, name, mode & OWNER_ONLY, dev);
  node.setattr = (n, attr) => setattr(n, narrow(attr));
  stream.setattr = (s, attr) => streamSetattr(s, narrow(attr));
}

/** PGlite's node filesystem, whose folders and files only the owner may read or write. */
class OwnerOnlyNodeFS extends NodeFS {
  override init(pg: PGlite, opts: ModuleOptions) {
    return super.init(pg, { ...opts, preRun: [...(opts.preRun ?? []), ownerOnly] });
  }
}

let initdbQueue: Promise<unknown> = Promise.resolve();

/**
 * Makes `dir` an initialised cluster folder only the owner may read, also one found readable by
 * others; initdb, when it has none, runs in a worker thread after any initdb already running.
 */
async function initialise(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!initialised(dir)) {
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
    await done;
  }
  await makePrivateFolder(dir);
}

const folder = (dataDir: string, name: string) => path.resolve(dataDir, "pglite", name);

// libpq's name for a server's socket in its folder: .s.PGSQL.<port>.
const SOCKET_PORT = 5432;
const SOCKET_FILE = `.s.PGSQL.${SOCKET_PORT}`;
// unix(7): sun_path holds 108 bytes, its terminating NUL included.
const SOCKET_PATH_MAX = 107;

/**
 * The owner-only folder of a database's socket: beside its data folder, or, where that path is too
 * long for a socket, a fresh private folder (mkdtemp makes it 0700) under the system's temporary folder.
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
 * Initialises the folders of `names` that have no database yet: copies of the install's migrated
 * template for that database when `migrations` name its schemas and it is usable (embedded-templates.ts),
 * else of the install's cluster, or, without one, of one initdb's result (each instance is a server of
 * its own, so they may share initdb's system identifier).
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
  // A migrated template's schemas are there: the start's migrations find nothing or only newer ones to apply.
  const missing = names
    .filter((name) => !initialised(folder(dataDir, name)))
    .map((name) => ({
      name,
      dir: folder(dataDir, name),
      from: migrations[name] && migratedTemplate(name, migrations[name]),
    }));
  const plain = missing.filter(({ from }) => !from);
  const template = plain.length > 0 ? embeddedTemplate() : undefined;
  // Without the install's cluster, initdb runs once, in the first folder that needs it.
  const source: Promise<string | undefined> =
    plain.length === 0 || template ? Promise.resolve(template) : initialise(plain[0]!.dir).then(() => plain[0]!.dir);
  // One copy after another, so that the first instance can start while the next folders are copied; each
  // keeps its source's modes (initdb's result is made the owner's by initialise, the template by its script).
  let previous: Promise<unknown> = source;
  const copies = new Map(
    missing.map(({ name, dir, from }) => {
      const copied = copyCluster(from ?? source, dir, previous);
      previous = copied;
      return [name, copied] as const;
    }),
  );
  return names.map((name) => copies.get(name) ?? Promise.resolve());
}

/**
 * Copies the cluster `from` to `dir` once `after` settled: beside it and
 * renamed, so that an interrupted copy is never taken for a database.
 */
async function copyCluster(from: string | Promise<string | undefined>, dir: string, after: Promise<unknown>) {
  const source = (await from)!;
  await after.catch(() => undefined);
  if (source === dir) return;
  const partial = `${dir}.partial`;
  await mkdir(path.dirname(dir), { recursive: true, mode: PRIVATE_DIR_MODE });
  await rm(partial, { recursive: true, force: true });
  await copyFolder(source, partial, PRIVATE_DIR_MODE);
  await rm(path.join(partial, "template.json"), { force: true });
  await rm(dir, { recursive: true, force: true });
  await rename(partial, dir);
}

/**
 * Prepares and starts the databases of `names` (in order), each as soon as its folder is ready, so that
 * PGlite's start (on this thread) overlaps the next folders' copies (in libuv's threads). If any fails,
 * those started are closed again.
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
type VacuumOptions = { logger?: Logger };

/**
 * `vacuum`: with autovacuum's work done on it, every minute
 * (embedded-vacuum.ts); without, none (tests, the install's template).
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  name: string,
  vacuum?: VacuumOptions,
): Promise<EmbeddedPostgres> {
  const dir = folder(dataDir, name);
  await initialise(dir);
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
