// What autovacuum does on a PostgreSQL that runs it: this machine's runs with
// it off (server-wide; a table's autovacuum settings, which the delivery
// migrations set, need the launcher on), so without this each delivery row
// would start on the dead row versions and the stale statistics of all the
// rows before it. Measured: the same rows after a VACUUM ANALYZE had p95s a
// quarter of those before it (docs/benchmark.md, "The growth rows").
import pg from "pg";

export const PIPELINE_TABLES = [
  `"organisation"."contact"`,
  `"organisation"."outbox"`,
  `"delivery"."delivery"`,
  `"delivery"."delivery_attempt"`,
  `"delivery"."delivery_event"`,
];

/** A connection to `databaseUrl` for `fn`, closed after. */
export async function withClient<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** VACUUM (ANALYZE) of the event pipeline's tables, on `db` (a connected client) or a new connection to it. */
export async function vacuumPipeline(db: pg.Client | string): Promise<void> {
  const vacuum = (client: pg.Client) => client.query(`vacuum (analyze) ${PIPELINE_TABLES.join(", ")}`);
  await (typeof db === "string" ? withClient(db, vacuum) : vacuum(db));
}

/** VACUUM (ANALYZE) of every table of the database: what autovacuum would have done before a measurement. */
export async function vacuumDatabase(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, (client) => client.query("vacuum (analyze)"));
}
