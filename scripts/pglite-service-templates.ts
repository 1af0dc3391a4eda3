// The second half of npm's postinstall (pglite-template.mjs runs it, through
// tsx, after it has made the install's cluster): a copy of that cluster for
// each service with the service's committed migrations applied, in
// <template>-services/<name>/. A first `npm start` copies these, so its
// migrations find nothing to apply: 27 migrations on four PGlite instances
// took 1.3-1.4 s of the cold start (README, "The memory rows"). Made again
// when the migrations changed; the start applies whatever a template lacks
// and ignores one another checkout's migrations made
// (embedded-postgres.ts, migratedTemplate).
import { readFileSync } from "node:fs";
import { chmod, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { openDatabase, migrate } from "../services/shared/database.js";
import { EMBEDDED_POOL_MAX, embeddedTemplate, serviceTemplateMigrations, serviceTemplatesFolder, startEmbeddedDatabases } from "../services/shared/embedded-postgres.js";
import { createLogger } from "../services/shared/logger.js";
import { SERVICE_SCHEMAS, migrationNames } from "./service-schemas.js";

/** Folders 0700, files 0600, as the install's cluster and every data folder. */
async function ownerOnly(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) await ownerOnly(child);
    else if (entry.isFile()) await chmod(child, 0o600);
  }
}

async function main(): Promise<void> {
  const base = embeddedTemplate();
  if (!base) return;
  const names = migrationNames();
  const stale = Object.keys(SERVICE_SCHEMAS).filter((name) => JSON.stringify(serviceTemplateMigrations(name)) !== JSON.stringify(names[name]));
  if (stale.length === 0) return;
  const started = Date.now();
  const folder = serviceTemplatesFolder();
  const partial = `${folder}.partial`;
  await rm(partial, { recursive: true, force: true });
  // Copies of the install's cluster (no migrations passed: none starts from an older migrated one).
  const databases = await startEmbeddedDatabases(partial, stale);
  const logger = createLogger("install", "silent");
  try {
    for (const [i, name] of stale.entries()) {
      const { schema, migrations } = SERVICE_SCHEMAS[name as keyof typeof SERVICE_SCHEMAS];
      const orm = await openDatabase({ clientUrl: databases[i]!.url, schema, entities: [], migrations, poolMax: EMBEDDED_POOL_MAX, logger });
      try {
        await migrate(orm);
        await orm.em.getConnection().execute("checkpoint");
      } finally {
        await orm.close();
      }
    }
  } finally {
    for (const db of databases) await db.close();
  }
  const made = JSON.parse(readFileSync(path.join(base, "template.json"), "utf8")) as object;
  await mkdir(folder, { recursive: true, mode: 0o700 });
  for (const name of stale) {
    const dir = path.join(partial, "pglite", name);
    await writeFile(path.join(dir, "template.json"), `${JSON.stringify({ ...made, migrations: names[name] })}\n`);
    await ownerOnly(dir);
    await rm(path.join(folder, name), { recursive: true, force: true });
    await rename(dir, path.join(folder, name));
  }
  await rm(partial, { recursive: true, force: true });
  console.log(`bizcard: made the services' migrated templates in ${folder} (${stale.join(", ")}; ${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

await main();
