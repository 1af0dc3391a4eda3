// `npm start`'s embedded databases: one PGlite instance the services share (DATA_DIR/pglite/platform,
// each service in its own schema, as on PostgreSQL), made on a fresh data folder from the install's
// migrated template. A data folder made before the services shared one keeps a database per service.
import path from "node:path";
import {
  startEmbeddedDatabases,
  type DatabaseMigrations,
  type EmbeddedPostgres,
} from "./embedded/embedded-postgres.js";
import type { Logger } from "../services/shared/logger.js";
import { embeddedTemplate, initialised, migratedTemplate } from "./embedded/embedded-templates.js";
import { EMBEDDED_DATABASE, SERVICE_SCHEMAS, migrationNames } from "./service-schemas.js";

/** Each service's database URL, and the instances to close on stop. */
export type PlatformDatabases = { urls: Record<string, string>; databases: EmbeddedPostgres[] };

/**
 * Starts the embedded databases of `services` in `dataDir`, each doing
 * autovacuum's work, telling `progress` what it does.
 */
export async function startPlatformDatabases(
  dataDir: string,
  services: readonly (keyof typeof SERVICE_SCHEMAS)[],
  progress: (step: string) => void,
  logger?: Logger,
): Promise<PlatformDatabases> {
  const made = (name: string) => initialised(path.join(dataDir, "pglite", name));
  const perService = !made(EMBEDDED_DATABASE) && services.some(made);
  const names = perService ? services : [EMBEDDED_DATABASE];
  const all = migrationNames();
  const migrations: DatabaseMigrations = perService
    ? Object.fromEntries(
        services.map((svc) => [svc, { [SERVICE_SCHEMAS[svc].schema]: all[SERVICE_SCHEMAS[svc].schema]! }]),
      )
    : { [EMBEDDED_DATABASE]: all };
  if (names.every(made))
    progress(`opening the ${perService ? "databases (one per service)" : "database"} in ${dataDir}`);
  else
    progress(
      `creating the ${perService ? "databases" : "database"} in ${dataDir} (first start: ${firstStartSource(names, migrations)})`,
    );
  const databases = await startEmbeddedDatabases(dataDir, names, migrations, { logger });
  const urls = Object.fromEntries(services.map((svc, i) => [svc, databases[perService ? i : 0]!.url]));
  return { urls, databases };
}

/** How a fresh data folder's databases are made, for the progress line. */
function firstStartSource(names: readonly string[], migrations: DatabaseMigrations): string {
  if (names.every((n) => migrations[n] && migratedTemplate(n, migrations[n])))
    return "the services' schemas made at install, copied";
  return embeddedTemplate() ? "the cluster made at install, copied" : "one initdb, copied";
}
