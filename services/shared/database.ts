// MikroORM on PostgreSQL. Each service owns one schema and its committed
// migrations; nothing here ever calls schema.update.
import { MikroORM, type EntitySchema, type Options } from "@mikro-orm/postgresql";
import type { MigrationObject } from "@mikro-orm/core";
import { Migrator } from "@mikro-orm/migrations";
import type { Logger } from "./logger.js";

export interface DatabaseOptions {
  clientUrl: string;
  /** The service's own PostgreSQL schema. */
  schema: string;
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
    extensions: [Migrator],
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

/** Applies the pending committed migrations; returns their names. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
}

export async function pingDatabase(orm: MikroORM): Promise<void> {
  await orm.em.fork().getConnection().execute("select 1");
}

/** A service's database as ServiceAppDeps describe it, migrated when MIGRATE_ON_START is on. */
export async function openServiceDatabase(
  deps: { databaseUrl: string; databasePoolMax: number; logger: Logger; config: { MIGRATE_ON_START: boolean } },
  options: { schema: string; entities: EntitySchema<any, any>[]; migrations: MigrationObject[] },
): Promise<MikroORM> {
  const orm = await openDatabase({ clientUrl: deps.databaseUrl, poolMax: deps.databasePoolMax, logger: deps.logger, ...options });
  if (deps.config.MIGRATE_ON_START) {
    const applied = await migrate(orm).catch(async (err) => {
      await orm.close();
      throw err;
    });
    if (applied.length) deps.logger.info({ applied, schema: options.schema }, "migrations applied");
  }
  return orm;
}
