// The second half of npm's postinstall (pglite-template.mjs runs it compiled, after making the install's
// cluster): a copy of that cluster with every service's schema and committed migrations applied, in
// <template>-migrated/platform/, so that a first start's migrations find nothing to apply
// (docs/benchmark.md, "The memory rows"). Made again when the migrations changed; the start applies
// whatever it lacks and ignores one another checkout's migrations made (embedded-templates.ts).
import { readFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { migrate, openDatabase } from "../services/shared/database.js";
import { EMBEDDED_POOL_MAX, startEmbeddedDatabases } from "./embedded/embedded-postgres.js";
import { embeddedTemplate, migratedTemplatesFolder, templateMigrations } from "./embedded/embedded-templates.js";
import { createLogger } from "../services/shared/logger.js";
import { PRIVATE_DIR_MODE, makePrivateFolder } from "./private-folder.js";
import { EMBEDDED_DATABASE, SERVICE_SCHEMAS, migrationNames } from "./service-schemas.js";

async function main(): Promise<void> {
  const base = embeddedTemplate();
  if (!base) return;
  const names = migrationNames();
  if (JSON.stringify(templateMigrations(EMBEDDED_DATABASE)) === JSON.stringify(names)) return;
  const started = Date.now();
  const folder = migratedTemplatesFolder();
  const partial = `${folder}.partial`;
  await rm(partial, { recursive: true, force: true });
  // A copy of the install's cluster (no migrations passed: it never starts from an older migrated one).
  const [db] = await startEmbeddedDatabases(partial, [EMBEDDED_DATABASE]);
  const logger = createLogger("install", "silent");
  const options = { clientUrl: db!.url, entities: [], poolMax: EMBEDDED_POOL_MAX, logger };
  try {
    for (const { schema, migrations } of Object.values(SERVICE_SCHEMAS)) {
      const orm = await openDatabase({ ...options, schema, migrations });
      try {
        await migrate(orm);
      } finally {
        await orm.close();
      }
    }
  } finally {
    await db!.close();
  }
  const made = JSON.parse(readFileSync(path.join(base, "template.json"), "utf8")) as object;
  const dir = path.join(partial, "pglite", EMBEDDED_DATABASE);
  await writeFile(path.join(dir, "template.json"), `${JSON.stringify({ ...made, migrations: names })}\n`);
  // Folders 0700, files 0600, as every data folder: the copies keep these modes.
  await makePrivateFolder(dir);
  await mkdir(folder, { recursive: true, mode: PRIVATE_DIR_MODE });
  await rm(path.join(folder, EMBEDDED_DATABASE), { recursive: true, force: true });
  await rename(dir, path.join(folder, EMBEDDED_DATABASE));
  await rm(partial, { recursive: true, force: true });
  console.log(
    `bizcard: made the services' migrated database template in ${path.join(folder, EMBEDDED_DATABASE)} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
}

await main();
