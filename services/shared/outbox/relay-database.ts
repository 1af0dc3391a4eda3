// The relay's own connections. On real PostgreSQL a service's requests fill
// its pool, and under load the relay's statements would wait behind them and
// fall far behind the commits. Embedded (PGlite, a pool of one): the service's own.
import type { MikroORM } from "@mikro-orm/postgresql";
import { onRealPostgres, openDatabase } from "../database.js";
import type { Logger } from "../logger.js";

/** Rounds run one at a time; the other connection serves the outbox gauges' reads. */
const RELAY_POOL_MAX = 2;

export interface RelayDatabase {
  orm: MikroORM;
  /** Its own connections: the relay's statements may be prepared ones. */
  own: boolean;
  /** Closes the relay's own connections (not the service's). */
  close(): Promise<void>;
}

export async function openRelayDatabase(
  deps: { databaseUrl: string; databasePoolMax: number; logger: Logger },
  schema: string,
  serviceOrm: MikroORM,
): Promise<RelayDatabase> {
  if (!onRealPostgres(deps)) return { orm: serviceOrm, own: false, close: async () => {} };
  const orm = await openDatabase({
    clientUrl: deps.databaseUrl,
    poolMax: RELAY_POOL_MAX,
    logger: deps.logger,
    schema,
    entities: [],
    migrations: [],
  });
  return { orm, own: true, close: () => orm.close() };
}
