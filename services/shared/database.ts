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
