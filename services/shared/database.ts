// MikroORM on PostgreSQL. Each service owns one schema and its committed
// migrations; nothing here ever calls schema.update.
import { MikroORM, type EntitySchema, type Options } from "@mikro-orm/postgresql";
import type { MigrationObject } from "@mikro-orm/core";
import type { Migrator } from "@mikro-orm/migrations";
import type { Logger } from "./logger.js";

export interface DatabaseOptions {
  clientUrl: string;
  /** The service's own PostgreSQL schema. */
  schema: string;
  // biome-ignore lint/suspicious/noExplicitAny: each service's entities, each of its own entity type
  entities: EntitySchema<any, any>[];
  migrations: MigrationObject[];
  poolMax: number;
  logger: Logger;
}

export async function openDatabase(options: DatabaseOptions): Promise<MikroORM> {
  const config: Options = {
    clientUrl: options.clientUrl,
    schema: options.schema,
    entities: options.entities,
    // The migrator (migrator() below) is registered when migrations run.
    migrations: {
      migrationsList: options.migrations,
      tableName: "mikro_orm_migrations",
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      silent: true,
    },
    pool: { min: 0, max: options.poolMax, idleTimeoutMillis: 30_000 },
    allowGlobalContext: false,
    forceUtcTimezone: true,
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: false },
    debug: false,
    logger: (message) => options.logger.debug({ orm: message }, "orm"),
  };
  return MikroORM.init(config);
}

/** The ORM's migrator, loaded on first use: a large module that most starts (nothing pending) never need. */
export async function migrator(orm: MikroORM): Promise<Migrator> {
  const { Migrator } = await import("@mikro-orm/migrations");
  // Registered again on each call: MikroORM keeps the migrator its first use made.
  Migrator.register(orm);
  return orm.getMigrator() as Migrator;
}

/** Applies the pending committed migrations; returns their names. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await (await migrator(orm)).up();
  return applied.map((m) => m.name);
}

/**
 * Whether a committed migration is not recorded as applied in
 * `schema` (one select; also when nothing was ever applied).
 */
export async function hasPendingMigrations(
  orm: MikroORM,
  schema: string,
  migrations: readonly MigrationObject[],
): Promise<boolean> {
  const applied = await orm.em
    .fork()
    .getConnection()
    .execute<{ name: string }[]>(`select "name" from "${schema}"."mikro_orm_migrations"`)
    .catch(() => undefined);
  if (!applied) return true;
  const names = new Set(applied.map((r) => r.name));
  return migrations.some((m) => !names.has(m.name));
}

export async function pingDatabase(orm: MikroORM): Promise<void> {
  await orm.em.fork().getConnection().execute("select 1");
}

/** Named prepared statements and side pools: real PostgreSQL only, not PGlite's one session per service. */
export function onRealPostgres(deps: { databasePoolMax: number }): boolean {
  return deps.databasePoolMax > 1;
}

/** A service's database as ServiceAppDeps describe it, migrated when MIGRATE_ON_START is on. */
export async function openServiceDatabase(
  deps: { databaseUrl: string; databasePoolMax: number; logger: Logger; config: { MIGRATE_ON_START: boolean } },
  // biome-ignore lint/suspicious/noExplicitAny: each service's entities, each of its own entity type
  options: { schema: string; entities: EntitySchema<any, any>[]; migrations: MigrationObject[] },
): Promise<MikroORM> {
  const orm = await openDatabase({
    clientUrl: deps.databaseUrl,
    poolMax: deps.databasePoolMax,
    logger: deps.logger,
    ...options,
  });
  if (deps.config.MIGRATE_ON_START && (await hasPendingMigrations(orm, options.schema, options.migrations))) {
    const applied = await migrateWithRetry(orm, deps.logger).catch(async (err) => {
      await orm.close();
      throw err;
    });
    if (applied.length) deps.logger.info({ applied, schema: options.schema }, "migrations applied");
  }
  return orm;
}

/** Replicas starting together race for the same migrations: the losers fail, and a retry finds nothing pending. */
async function migrateWithRetry(orm: MikroORM, logger: Logger, attempts = 4): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate(orm);
    } catch (err) {
      if (attempt >= attempts) throw err;
      logger.warn({ err, attempt }, "migrations failed; trying again (another replica may be migrating)");
      await new Promise((r) => setTimeout(r, 250 * attempt + Math.random() * 250));
    }
  }
}
