// What autovacuum does on a PostgreSQL that runs it: this machine's runs with
// it off (server-wide; a table's autovacuum settings, which the delivery
// migrations set, need the launcher on), so without this each delivery row
// would start on the dead row versions and the stale statistics of all the
// rows before it. Measured: the same rows after a VACUUM ANALYZE had p95s a
// quarter of those before it (README, "The growth rows").
import pg from "pg";

export const PIPELINE_TABLES = [
  `"organisation"."contact"`,
  `"organisation"."outbox"`,
  `"delivery"."delivery"`,
  `"delivery"."delivery_attempt"`,
  `"delivery"."delivery_event"`,
];

/** VACUUM (ANALYZE) of the event pipeline's tables, on `db` (a connected client) or a new connection to it. */
export async function vacuumPipeline(db: pg.Client | string): Promise<void> {
  const client = typeof db === "string" ? new pg.Client({ connectionString: db }) : db;
  if (typeof db === "string") await client.connect();
  try {
    await client.query(`vacuum (analyze) ${PIPELINE_TABLES.join(", ")}`);
  } finally {
    if (typeof db === "string") await client.end();
  }
}

/** VACUUM (ANALYZE) of every table of the database: what autovacuum would have done before a measurement. */
export async function vacuumDatabase(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query("vacuum (analyze)");
  } finally {
    await client.end();
  }
}
