// What npm's postinstall leaves for the embedded default's first start, in node_modules/.cache/bizcard-pglite/:
// an initialised PGlite cluster (<PGlite version>/, scripts/pglite-template.mjs) and a copy of it with the
// services' schemas migrated (<PGlite version>-migrated/<database>/, scripts/pglite-migrated-template.ts).
// Each is used only when its marker (template.json) names this PGlite and these initdb settings.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

// Memory. PGlite keeps shared_buffers inside its WebAssembly heap, touched as it starts, and initdb's
// default is many times what the services' small tables need; the rest is read through the OS's cache
// (a larger setting only adds resident memory: docs/benchmark.md, "The memory rows"). `initdb --set`
// writes it into the new folder's postgresql.conf.
export const SHARED_BUFFERS = "shared_buffers=8MB";
export const INITDB_PARAMS: readonly string[] = ["--set", SHARED_BUFFERS];

/** Each schema's migrations (names, in order). */
export type SchemaMigrations = Readonly<Record<string, readonly string[]>>;

interface TemplateMarker {
  pglite?: string;
  initdb?: string[];
  /** A migrated template: each schema's migrations applied to it, in order. */
  migrations?: Record<string, string[]>;
}

const PGLITE_ENTRY = createRequire(import.meta.url).resolve("@electric-sql/pglite");
const NODE_MODULES = PGLITE_ENTRY.slice(
  0,
  PGLITE_ENTRY.lastIndexOf(`${path.sep}@electric-sql${path.sep}pglite${path.sep}`),
);

export const initialised = (dir: string) => existsSync(path.join(dir, "PG_VERSION"));

/** PGlite's version and the folder of the install's cluster (BIZCARD_PGLITE_TEMPLATE_DIR overrides it). */
function templateFolder(): { version: string; dir: string } {
  const manifest = path.join(NODE_MODULES, "@electric-sql", "pglite", "package.json");
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  const dir = process.env.BIZCARD_PGLITE_TEMPLATE_DIR ?? path.join(NODE_MODULES, ".cache", "bizcard-pglite", version);
  return { version, dir };
}

/** The marker of the cluster in `dir`, when this PGlite made it with these settings. */
function sameMarker(dir: string): TemplateMarker | undefined {
  try {
    const marker = JSON.parse(readFileSync(path.join(dir, "template.json"), "utf8")) as TemplateMarker;
    const same =
      marker.pglite === templateFolder().version && JSON.stringify(marker.initdb) === JSON.stringify(INITDB_PARAMS);
    return same && initialised(dir) ? marker : undefined;
  } catch {
    return undefined;
  }
}

/** The install's initialised cluster, if there is one made by this PGlite with these settings. */
export function embeddedTemplate(): string | undefined {
  const { dir } = templateFolder();
  return sameMarker(dir) ? dir : undefined;
}

/** Where the install keeps the migrated copies of the cluster. */
export function migratedTemplatesFolder(): string {
  return `${templateFolder().dir}-migrated`;
}

/** The migrations applied to the migrated template of database `name`, if this PGlite made it with these settings. */
export function templateMigrations(name: string): Record<string, string[]> | undefined {
  return sameMarker(path.join(migratedTemplatesFolder(), name))?.migrations;
}

/**
 * The install's migrated copy of the cluster for database `name`, if usable and, for each schema it holds,
 * what it applied is where that schema's `migrations` (the code's, in order) begin: the start applies the
 * rest. One made by other code (another checkout's migrations) is not used.
 */
export function migratedTemplate(name: string, migrations: SchemaMigrations): string | undefined {
  const applied = templateMigrations(name);
  if (!applied) return undefined;
  const begins = (done: string[], all: readonly string[] | undefined) =>
    all !== undefined && done.length <= all.length && done.every((m, i) => m === all[i]);
  return Object.entries(applied).every(([schema, done]) => begins(done, migrations[schema]))
    ? path.join(migratedTemplatesFolder(), name)
    : undefined;
}
